# A container image of the broker, for those who have Docker.
#
# UNTESTED: the machines this project is built and tested on have no Docker
# engine, so nothing here has ever built or run this image. The release
# tarball (`cargo xtask dist`) is what the test suite checks.
#
#   docker build -t mk-server .
#   docker run --rm -p 9092:9092 -p 9192:9192 -v mk-data:/data mk-server
#
# Inside the container the broker listens on all interfaces and advertises
# `localhost` to Kafka clients (for `-p 9092:9092` on the same host); set
# --kafka-advertised-host to the name clients use otherwise. Only one broker
# id per container this way: with `--brokers 1,2,3` publish 9092-9094 too.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# rust-toolchain.toml pins the toolchain; rustup installs it here.
RUN cargo build --profile dist --locked -p mk-server --bin mk-server

FROM debian:bookworm-slim
COPY --from=build /src/target/dist/mk-server /usr/local/bin/mk-server
VOLUME /data
EXPOSE 9092 9192
ENTRYPOINT ["mk-server", "--data-dir", "/data", "--listen", "0.0.0.0:9192", "--kafka-listen", "0.0.0.0:9092", "--kafka-advertised-host", "localhost"]
