//! The process metrics every Prometheus client library exports, read from
//! Linux's /proc (and the CPU time from the process's CPU clock) at each
//! scrape: CPU time, resident and virtual memory,
//! open and allowed file descriptors, and the start time. Elsewhere (no
//! /proc) the families are declared but have no series.

use super::exposition::Exposition;

/// What /proc says about this process now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessSample {
    pub cpu_seconds: f64,
    pub resident_bytes: f64,
    pub virtual_bytes: f64,
    pub start_time_seconds: f64,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
}

/// Reads the sample; `None` without /proc.
pub fn sample() -> Option<ProcessSample> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks = rustix::param::clock_ticks_per_second() as f64;
    let page = rustix::param::page_size() as f64;
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as f64);
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    // The process's CPU clock counts nanoseconds; /proc's utime and stime
    // count 10 ms ticks and read 0 for a process that has used less.
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    parse(&stat, &boot, ticks, page).map(|mut s| {
        s.cpu_seconds = cpu.tv_sec as f64 + cpu.tv_nsec as f64 / 1e9;
        s.open_fds = open_fds;
        s.max_fds = limit.current.map(|n| n as f64);
        s
    })
}

/// The sample from the texts of /proc/self/stat and /proc/stat.
fn parse(stat: &str, boot: &str, ticks: f64, page: f64) -> Option<ProcessSample> {
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: the fields that follow start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field n is fields[n - 3].
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    let (utime, stime) = (field(14)?, field(15)?);
    let (start_ticks, vsize, rss_pages) = (field(22)?, field(23)?, field(24)?);
    let btime: f64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(ProcessSample {
        cpu_seconds: (utime + stime) / ticks,
        resident_bytes: rss_pages * page,
        virtual_bytes: vsize,
        start_time_seconds: btime + start_ticks / ticks,
        open_fds: None,
        max_fds: None,
    })
}

/// Writes the process families' series.
pub fn write(e: &mut Exposition) {
    let Some(s) = sample() else { return };
    e.sample("process_cpu_seconds_total", Vec::new(), s.cpu_seconds);
    e.sample(
        "process_resident_memory_bytes",
        Vec::new(),
        s.resident_bytes,
    );
    e.sample("process_virtual_memory_bytes", Vec::new(), s.virtual_bytes);
    e.sample(
        "process_start_time_seconds",
        Vec::new(),
        s.start_time_seconds,
    );
    if let Some(n) = s.open_fds {
        e.sample("process_open_fds", Vec::new(), n);
    }
    if let Some(n) = s.max_fds {
        e.sample("process_max_fds", Vec::new(), n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name_even_with_spaces_in_it() {
        // Fields 14/15 (utime/stime) 250 and 50 ticks, 22 (starttime)
        // 1000 ticks, 23 (vsize) 8192 bytes, 24 (rss) 3 pages.
        let stat = "42 (mk (server) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 \
                    1000 8192 3 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 7\n";
        let s = parse(stat, boot, 100.0, 4096.0).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.start_time_seconds, 1_700_000_010.0);
        assert_eq!(s.virtual_bytes, 8192.0);
        assert_eq!(s.resident_bytes, 3.0 * 4096.0);
        assert_eq!(parse("garbage", boot, 100.0, 4096.0), None);
        assert_eq!(parse(stat, "no boot time", 100.0, 4096.0), None);
    }

    #[test]
    fn this_process_has_a_sample_when_proc_exists() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let s = sample().expect("a sample from /proc");
        assert!(s.resident_bytes > 0.0);
        assert!(s.open_fds.unwrap() >= 1.0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(s.start_time_seconds <= now + 1.0 && s.start_time_seconds > now - 86_400.0 * 365.0);
    }
}
