// kafkajs side of the MiniKafka live interop suite. Usage:
//   node mk_interop.js <command>   (the command's arguments as JSON on stdin)
// Prints one JSON result line on stdout; the pytest driver
// (interop/mkinterop/drivers.py, class KafkaJs) does every check.
//
// kafkajs's consumer always joins a consumer group, and the plain reads of
// the suite use none (group consumers are `group-member`); `read-all`
// therefore reads through kafkajs's own Cluster and Broker objects (the code
// its consumer fetches with) and its Batch class (the consumer's filtering),
// with manual offsets.
'use strict'

const {
  Kafka,
  AssignerProtocol,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  Partitioners,
  logLevel,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const Batch = require('kafkajs/src/consumer/batch')
const ISOLATION_LEVEL = require('kafkajs/src/protocol/isolationLevel')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const DEBUG = process.env.MK_INTEROP_DEBUG === '1'
const TIMEOUT_MS = 60000

// A command's `security` argument ({ca, mechanism, username, password}):
// TLS trusting the CA file, SASL with the mechanism, for every client the
// command makes.
let SECURITY = {}

function securityOf(s) {
  const out = {}
  if (s.ca) out.ssl = { ca: [require('fs').readFileSync(s.ca, 'utf8')] }
  if (s.mechanism) out.sasl = { mechanism: s.mechanism.toLowerCase(), username: s.username, password: s.password }
  return out
}

function client(bootstrap) {
  return new Kafka({
    ...SECURITY,
    clientId: 'mk-interop-kafkajs',
    brokers: bootstrap.split(','),
    logLevel: DEBUG ? logLevel.DEBUG : logLevel.WARN,
    // Log to stderr: stdout carries the result.
    logCreator: () => ({ namespace, level, label, log }) => {
      const { message, ...extra } = log
      process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
    },
    retry: { retries: 5 },
  })
}

function headersIn(pairs) {
  const out = {}
  for (const [k, v] of pairs) {
    if (k in out) out[k] = [].concat(out[k], v)
    else out[k] = v
  }
  return out
}

function headersOut(obj) {
  const pairs = []
  for (const [k, v] of Object.entries(obj || {})) {
    for (const one of [].concat(v)) pairs.push([k, one === null ? null : one.toString()])
  }
  return pairs
}

function compressionOf(name) {
  switch (name) {
    case null:
    case undefined:
      return CompressionTypes.None
    case 'gzip':
      return CompressionTypes.GZIP
    case 'snappy':
      return CompressionTypes.Snappy
    default:
      throw new Error(`kafkajs driver has no codec ${name}`)
  }
}

async function withAdmin(bootstrap, f) {
  const admin = client(bootstrap).admin()
  await admin.connect()
  try {
    return await f(admin)
  } finally {
    await admin.disconnect()
  }
}

async function partitionCount(admin, topic) {
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  const t = md.topics.find(t => t.name === topic)
  return t ? t.partitions.filter(p => p.leader >= 0).length : 0
}

const commands = {
  async 'create-topic'({ bootstrap, topic, partitions, replicationFactor }) {
    return withAdmin(bootstrap, async admin => {
      const created = await admin.createTopics({
        topics: [{ topic, numPartitions: partitions, replicationFactor }],
        waitForLeaders: true,
        timeout: 30000,
      })
      if (!created) throw new Error(`createTopics(${topic}) answered false (already exists?)`)
      const deadline = Date.now() + TIMEOUT_MS
      let seen = 0
      while (Date.now() < deadline) {
        seen = await partitionCount(admin, topic)
        if (seen === partitions) return { created, partitions: seen }
        await new Promise(r => setTimeout(r, 50))
      }
      throw new Error(`metadata of ${topic}: ${seen} partitions with leaders, expected ${partitions}`)
    })
  },

  async 'partition-count'({ bootstrap, topic }) {
    return withAdmin(bootstrap, async admin => ({ partitions: await partitionCount(admin, topic) }))
  },

  async produce({ bootstrap, topic, records, compression }) {
    // The producer's own partitioner, wrapped to learn where it put each
    // message (it is called once per message without an explicit partition).
    const chosen = new WeakMap()
    const createPartitioner = () => {
      const inner = Partitioners.DefaultPartitioner()
      return args => {
        const p = inner(args)
        chosen.set(args.message, p)
        return p
      }
    }
    const producer = client(bootstrap).producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner,
    })
    await producer.connect()
    const acks = []
    try {
      const chunk = 500
      for (let start = 0; start < records.length; start += chunk) {
        const messages = records.slice(start, start + chunk).map(r => {
          const m = { key: r.key, value: r.value, headers: headersIn(r.headers) }
          if (r.timestamp !== null) m.timestamp = String(r.timestamp)
          if (r.partition !== null) m.partition = r.partition
          return m
        })
        const result = await producer.send({
          topic,
          acks: -1,
          timeout: 30000,
          compression: compressionOf(compression),
          messages,
        })
        const base = {}
        for (const md of result) {
          if (md.errorCode !== 0) throw new Error(`produce answered ${JSON.stringify(md)}`)
          base[md.partition] = BigInt(md.baseOffset)
        }
        // One batch per partition and send: offsets follow send order.
        const next = {}
        for (const m of messages) {
          const p = m.partition !== undefined ? m.partition : chosen.get(m)
          if (p === undefined || base[p] === undefined) {
            throw new Error(`no acknowledgement for a message on partition ${p}: ${JSON.stringify(result)}`)
          }
          const i = next[p] || 0n
          next[p] = i + 1n
          acks.push({ partition: p, offset: Number(base[p] + i) })
        }
      }
    } finally {
      await producer.disconnect()
    }
    return { acks }
  },

  async 'describe-topic-config'({ bootstrap, topic }) {
    return withAdmin(bootstrap, async admin => {
      const { resources } = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
        includeSynonyms: false,
      })
      const [res] = resources
      if (res.errorCode !== 0) throw new Error(`describeConfigs answered ${JSON.stringify(res)}`)
      return { configs: Object.fromEntries(res.configEntries.map(e => [e.configName, e.configValue])) }
    })
  },

  async 'alter-topic-config'({ bootstrap, topic, key, value }) {
    return withAdmin(bootstrap, async admin => {
      const { resources } = await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: key, value }] }],
      })
      const failed = resources.filter(r => r.errorCode !== 0)
      if (failed.length) throw new Error(`alterConfigs answered ${JSON.stringify(failed)}`)
      return {}
    })
  },

  async 'list-groups'({ bootstrap }) {
    return withAdmin(bootstrap, async admin => admin.listGroups())
  },

  async 'describe-group'({ bootstrap, group }) {
    return withAdmin(bootstrap, async admin => {
      const { groups } = await admin.describeGroups([group])
      const [g] = groups
      if (g.errorCode !== 0) throw new Error(`describeGroups answered ${JSON.stringify(g)}`)
      const members = g.members.map(m => {
        const decoded = m.memberAssignment.length ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
        const assignment = {}
        for (const [topic, ps] of Object.entries((decoded && decoded.assignment) || {})) {
          assignment[topic] = [...ps].sort((a, b) => a - b)
        }
        return { member_id: m.memberId, client_id: m.clientId, assignment }
      })
      return { state: g.state.toLowerCase(), protocol: g.protocol || null, members }
    })
  },

  async 'group-offsets'({ bootstrap, group, topic }) {
    return withAdmin(bootstrap, async admin => {
      const [res] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
      const offsets = {}
      for (const { partition, offset } of res.partitions) offsets[partition] = Number(offset)
      return { offsets }
    })
  },

  async 'delete-group'({ bootstrap, group }) {
    return withAdmin(bootstrap, async admin => {
      try {
        await admin.deleteGroups([group])
        return { error: null }
      } catch (e) {
        if (e.name !== 'KafkaJSDeleteGroupsError') throw e
        const [g] = e.groups
        return { error: g.error.type }
      }
    })
  },

  async 'set-group-offsets'({ bootstrap, group, topic, offsets }) {
    return withAdmin(bootstrap, async admin => {
      const partitions = Object.entries(offsets).map(([p, o]) => ({ partition: Number(p), offset: String(o) }))
      await admin.setOffsets({ groupId: group, topic, partitions })
      return {}
    })
  },

  async 'create-partitions'({ bootstrap, topic, count }) {
    return withAdmin(bootstrap, async admin => {
      await admin.createPartitions({ topicPartitions: [{ topic, count }], timeout: 30000 })
      return {}
    })
  },

  async 'delete-topic'({ bootstrap, topic }) {
    return withAdmin(bootstrap, async admin => {
      await admin.deleteTopics({ topics: [topic], timeout: 30000 })
      return {}
    })
  },

  async 'list-topics'({ bootstrap }) {
    return withAdmin(bootstrap, async admin => ({ topics: await admin.listTopics() }))
  },

  async 'end-offsets'({ bootstrap, topic }) {
    return withAdmin(bootstrap, async admin => {
      const offsets = {}
      for (const { partition, offset } of await admin.fetchTopicOffsets(topic)) {
        offsets[partition] = Number(offset)
      }
      return { offsets }
    })
  },

  async 'offsets-for-times'({ bootstrap, topic, timestamp }) {
    return withAdmin(bootstrap, async admin => {
      const offsets = {}
      for (const { partition, offset } of await admin.fetchTopicOffsetsByTimestamp(topic, timestamp)) {
        offsets[partition] = Number(offset)
      }
      return { offsets }
    })
  },

  async 'read-all'({ bootstrap, topic, maxBytes, isolation }) {
    const kafka = client(bootstrap)
    const createCluster = Object.getOwnPropertySymbols(kafka).find(
      s => s.description === 'private:Kafka:createCluster'
    )
    // read_committed is the consumer's default isolation level.
    const isolationLevel =
      isolation === 'read_uncommitted' ? ISOLATION_LEVEL.READ_UNCOMMITTED : ISOLATION_LEVEL.READ_COMMITTED
    const cluster = kafka[createCluster]({ isolationLevel })
    await cluster.connect()
    try {
      await cluster.addTargetTopic(topic)
      await cluster.refreshMetadata()
      const parts = cluster.findTopicPartitionMetadata(topic).map(p => p.partitionId)
      if (parts.length === 0) throw new Error(`no partitions of ${topic} in metadata`)
      const listed = async fromBeginning => {
        const [{ partitions }] = await cluster.fetchTopicsOffset([
          { topic, fromBeginning, partitions: parts.map(partition => ({ partition })) },
        ])
        return Object.fromEntries(partitions.map(({ partition, offset }) => [partition, BigInt(offset)]))
      }
      // ListOffsets latest: the last stable offset under read_committed.
      const ends = await listed(false)
      const pos = await listed(true)
      const records = []
      const deadline = Date.now() + TIMEOUT_MS
      for (;;) {
        const behind = parts.filter(p => pos[p] < ends[p])
        if (behind.length === 0) break
        if (Date.now() > deadline) {
          throw new Error(`read timed out at ${JSON.stringify(pos, (k, v) => String(v))}`)
        }
        const byLeader = cluster.findLeaderForPartitions(topic, behind)
        for (const [nodeId, ps] of Object.entries(byLeader)) {
          const broker = await cluster.findBroker({ nodeId })
          const { responses } = await broker.fetch({
            isolationLevel,
            maxWaitTime: 500,
            minBytes: 1,
            maxBytes: maxBytes || 10485760,
            topics: [
              {
                topic,
                partitions: ps.map(p => ({
                  partition: p,
                  fetchOffset: String(pos[p]),
                  maxBytes: maxBytes || 1048576,
                })),
              },
            ],
          })
          for (const { partitions } of responses) {
            for (const data of partitions) {
              if (data.errorCode !== 0) throw new Error(`fetch answered ${JSON.stringify(data.errorCode)}`)
              const batch = new Batch(topic, String(pos[data.partition]), data)
              for (const m of batch.messages) {
                records.push({
                  partition: data.partition,
                  offset: Number(m.offset),
                  key: m.key === null ? null : m.key.toString(),
                  value: m.value === null ? null : m.value.toString(),
                  timestamp: Number(m.timestamp),
                  headers: headersOut(m.headers),
                })
              }
              if (!batch.isEmptyIncludingFiltered()) {
                pos[data.partition] = BigInt(batch.lastOffset()) + 1n
              }
            }
          }
        }
      }
      return { records }
    } finally {
      await cluster.disconnect()
    }
  },
}

// One consumer-group member, the kafkajs side of interop/mkinterop/member.py
// (same config, same events, one JSON line each on stdout). Processing is
// "print the batch's records, then commit the offsets after them" inside
// eachBatch, so a graceful rebalance never hands over a partition with
// processed but uncommitted records. `stop` on stdin (or reaching `limit`)
// disconnects the consumer, which leaves the group.
function emit(ev, fields = {}) {
  process.stdout.write(JSON.stringify({ ev, t: Date.now() / 1000, ...fields }) + '\n')
}

commands['group-member'] = async function groupMember(cfg) {
  const kafka = client(cfg.bootstrap)
  const opts = {
    groupId: cfg.group,
    sessionTimeout: cfg.session_timeout_ms || 6000,
    heartbeatInterval: cfg.heartbeat_interval_ms || 1000,
    rebalanceTimeout: cfg.max_poll_interval_ms || 30000,
    maxWaitTimeInMs: 200,
  }
  if (cfg.isolation_level === 'read_uncommitted') opts.readUncommitted = true
  const consumer = kafka.consumer(opts)
  const topic = cfg.topics[0]
  let assigned = []
  let processed = 0
  let stopping = false
  let stopRequested
  const stopped = new Promise(resolve => {
    stopRequested = resolve
  })
  const requestStop = () => {
    stopping = true
    stopRequested()
  }
  const { GROUP_JOIN, REBALANCING, CRASH } = consumer.events
  consumer.on(GROUP_JOIN, ({ payload }) => {
    assigned = [...((payload.memberAssignment || {})[topic] || [])].sort((a, b) => a - b)
    // GROUP_JOIN carries the whole assignment (also after a rejoin that
    // REBALANCING did not announce, e.g. UNKNOWN_MEMBER_ID).
    emit('assigned', { partitions: assigned, full: true, leader: payload.isLeader })
  })
  consumer.on(REBALANCING, () => {
    // kafkajs's classic protocol is eager: the whole assignment goes.
    emit('revoked', { partitions: assigned })
    assigned = []
  })
  consumer.on(CRASH, ({ payload }) => {
    emit('error', { error: String(payload.error), restart: payload.restart })
  })
  process.stdin.setEncoding('utf8')
  let pending = ''
  process.stdin.on('data', chunk => {
    pending += chunk
    if (pending.split('\n').some(l => l.trim() === 'stop')) requestStop()
  })
  process.stdin.on('end', requestStop)

  await consumer.connect()
  await consumer.subscribe({ topics: cfg.topics, fromBeginning: true })
  emit('started')
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isRunning, isStale }) => {
      if (stopping) return
      const recs = []
      for (const m of batch.messages) {
        if (!isRunning() || isStale()) break
        recs.push([batch.partition, Number(m.offset), m.value === null ? null : m.value.toString()])
        if (cfg.batch && recs.length >= cfg.batch) break
      }
      if (recs.length === 0) return
      emit('records', { recs })
      processed += recs.length
      const next = recs[recs.length - 1][1] + 1
      try {
        await consumer.commitOffsets([{ topic, partition: batch.partition, offset: String(next) }])
        emit('committed', { offsets: { [batch.partition]: next } })
      } catch (e) {
        emit('commit_failed', { error: String(e) })
        throw e
      }
      resolveOffset(String(next - 1))
      if (cfg.limit !== undefined && cfg.limit !== null && processed >= cfg.limit) requestStop()
    },
  })
  await stopped
  await consumer.disconnect()
  emit('closed')
  process.stdin.destroy()
  return null
}

async function main() {
  const name = process.argv[2]
  const command = commands[name]
  if (!command) throw new Error(`unknown command ${name}; known: ${Object.keys(commands).join(', ')}`)
  let args
  if (process.argv[3] !== undefined) {
    // Long-running commands (group-member) take their arguments here and
    // keep stdin for control lines.
    args = JSON.parse(process.argv[3])
  } else {
    const chunks = []
    for await (const c of process.stdin) chunks.push(c)
    args = JSON.parse(Buffer.concat(chunks).toString() || '{}')
  }
  if (args.security) SECURITY = securityOf(args.security)
  const result = await command(args)
  if (result !== null) process.stdout.write(JSON.stringify(result) + '\n')
}

main().catch(e => {
  process.stderr.write(`mk_interop.js: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
