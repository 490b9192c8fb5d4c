# shellcheck shell=bash
# Sourceable helper: runs a real Apache Kafka 4.x broker (single node, KRaft: broker and
# controller in one JVM) on 127.0.0.1 for process-level tests. Same contract as
# test/kafka/mock_broker.sh where the two overlap:
#
#   source test/kafka/broker/kafka_broker.sh
#   trap kafka_broker_stop EXIT
#   kafka_broker_start TOPIC:PARTITIONS...   # exports KAFKA_BROKERS (127.0.0.1:PORT)
#   kafka_broker_down; kafka_broker_up       # SIGTERM (clean shutdown), start again: same
#                                            # ports, same log dir, same data
#   kafka_broker_kill                        # SIGKILL; kafka_broker_up brings it back
#   kafka_broker_restart                     # down + up
#   kafka_broker_pause; kafka_broker_resume  # SIGSTOP / SIGCONT: a hung broker, port open
#   kafka_topic_create NAME PARTITIONS; kafka_topic_add_partitions NAME TOTAL
#   kafka_topic_delete NAME; kafka_delete_records TOPIC PARTITION OFFSET (moves the log start)
#   kafka_broker_stop                        # SIGTERM, SIGKILL after a bound; removes the dir
#
# The jars come from Maven (test/kafka/broker/pom.xml, `mvn dependency:copy-dependencies`)
# once per machine into $STOATFLOW_KAFKA_CACHE (default ~/.cache/stoatflow/kafka-VERSION);
# kafka_broker_fetch does only that. Needs java (17+) and mvn (for the first fetch).
# Call kafka_broker_start/up from the test's own shell (not $( ) or a pipe): the JVM must
# be a child of the shell that later waits for it.

_kafka_broker_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_BROKER_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$_kafka_broker_here/pom.xml")
KAFKA_BROKER_CACHE=${STOATFLOW_KAFKA_CACHE:-$HOME/.cache/stoatflow/kafka-$KAFKA_BROKER_VERSION}
KAFKA_BROKER_START_TIMEOUT=${KAFKA_BROKER_START_TIMEOUT:-60} # s: JVM start to metadata served
KAFKA_BROKER_STOP_TIMEOUT=${KAFKA_BROKER_STOP_TIMEOUT:-20}   # s: SIGTERM to exit, then SIGKILL
KAFKA_BROKER_HEAP=${KAFKA_BROKER_HEAP:-384m}
KAFKA_BROKER_PID=
KAFKA_BROKER_DIR=
KAFKA_BROKER_PORT=
KAFKA_BROKER_CONTROLLER_PORT=

_kafka_broker_log() { echo "kafka_broker: $*" >&2; }

_kafka_broker_need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 && continue
        case $tool in
        java) _kafka_broker_log "java not found: Apache Kafka $KAFKA_BROKER_VERSION needs a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)" ;;
        mvn) _kafka_broker_log "mvn not found: the first run fetches the broker jars with Maven (Debian: apt-get install maven), or point STOATFLOW_KAFKA_CACHE at a directory of jars" ;;
        *) _kafka_broker_log "$tool not found" ;;
        esac
        return 1
    done
}

# Fetches the jars once (a complete cache has a .complete marker; concurrent fetches are
# serialized by a lock). Prints nothing on success unless KAFKA_BROKER_VERBOSE=1.
kafka_broker_fetch() {
    [[ -f $KAFKA_BROKER_CACHE/.complete ]] && return 0
    _kafka_broker_need java mvn || return 1
    mkdir -p "$(dirname "$KAFKA_BROKER_CACHE")" || return 1
    (
        flock -w 600 9 || { _kafka_broker_log "could not lock $KAFKA_BROKER_CACHE.lock"; exit 1; }
        [[ -f $KAFKA_BROKER_CACHE/.complete ]] && exit 0
        _kafka_broker_log "fetching Apache Kafka $KAFKA_BROKER_VERSION jars into $KAFKA_BROKER_CACHE (once)"
        local t0 tmp
        t0=$(date +%s)
        tmp=$KAFKA_BROKER_CACHE.tmp.$$
        rm -rf "$tmp"
        if ! mvn -q -B -f "$_kafka_broker_here/pom.xml" dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
            cat "$tmp.log" >&2
            _kafka_broker_log "mvn could not fetch the broker jars (see above)"
            rm -rf "$tmp" "$tmp.log"
            exit 1
        fi
        rm -f "$tmp.log"
        touch "$tmp/.complete"
        rm -rf "$KAFKA_BROKER_CACHE"
        mv "$tmp" "$KAFKA_BROKER_CACHE"
        _kafka_broker_log "fetched $(find "$KAFKA_BROKER_CACHE" -name '*.jar' | wc -l) jars in $(($(date +%s) - t0))s"
    ) 9>"$KAFKA_BROKER_CACHE.lock"
}

_kafka_broker_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

_kafka_broker_alive() { [[ -n $KAFKA_BROKER_PID ]] && kill -0 "$KAFKA_BROKER_PID" 2>/dev/null; }

# Runs a Kafka tool class from the jars (short-lived JVM: C1 only, serial GC, small heap).
_kafka_tool() {
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
        -Dlog4j2.configurationFile="$KAFKA_BROKER_DIR/tools-log4j2.properties" \
        -cp "$KAFKA_BROKER_CACHE/*" "$@"
}

# Metadata is served: kcat lists our broker (bounded by -m and timeout).
_kafka_broker_serves() {
    timeout 10 kcat -L -b "127.0.0.1:$KAFKA_BROKER_PORT" -m 3 2>/dev/null | grep -q "broker 1 at 127.0.0.1:$KAFKA_BROKER_PORT"
}

# Polls "$@" every 0.2 s until it returns 0; gives up when the JVM died or after SECONDS.
_kafka_broker_wait_for() { # SECONDS COMMAND...
    local deadline=$(($(date +%s) + $1))
    shift
    while :; do
        "$@" && return 0
        _kafka_broker_alive || return 1
        (($(date +%s) >= deadline)) && return 1
        sleep 0.2
    done
}

# The JVM: the caller's child, stdout/stderr into the scratch dir (log4j writes server.log).
_kafka_broker_launch() {
    local t0
    t0=$(date +%s.%N)
    java -Xms128m -Xmx"$KAFKA_BROKER_HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$KAFKA_BROKER_DIR/log4j2.properties" \
        -cp "$KAFKA_BROKER_CACHE/*" kafka.Kafka "$KAFKA_BROKER_DIR/server.properties" \
        >>"$KAFKA_BROKER_DIR/stdout" 2>&1 &
    KAFKA_BROKER_PID=$!
    if ! _kafka_broker_wait_for "$KAFKA_BROKER_START_TIMEOUT" _kafka_broker_serves; then
        _kafka_broker_log "no metadata from 127.0.0.1:$KAFKA_BROKER_PORT within ${KAFKA_BROKER_START_TIMEOUT}s (or the JVM died); last lines of its log:"
        tail -n 30 "$KAFKA_BROKER_DIR/stdout" "$KAFKA_BROKER_DIR/server.log" >&2 2>/dev/null
        return 1
    fi
    KAFKA_BROKER_START_SECONDS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    [[ ${KAFKA_BROKER_VERBOSE:-0} == 1 ]] && _kafka_broker_log "serving metadata after ${KAFKA_BROKER_START_SECONDS}s (pid $KAFKA_BROKER_PID)"
    return 0
}

kafka_broker_start() {
    if [[ -n $KAFKA_BROKER_PID ]]; then
        _kafka_broker_log "already running (pid $KAFKA_BROKER_PID)"
        return 1
    fi
    _kafka_broker_need java kcat python3 || return 1
    kafka_broker_fetch || return 1
    KAFKA_BROKER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stoatflow-kafka-broker.XXXXXX")
    KAFKA_BROKER_PORT=$(_kafka_broker_free_port)
    KAFKA_BROKER_CONTROLLER_PORT=$(_kafka_broker_free_port)
    while [[ $KAFKA_BROKER_CONTROLLER_PORT == "$KAFKA_BROKER_PORT" ]]; do
        KAFKA_BROKER_CONTROLLER_PORT=$(_kafka_broker_free_port)
    done
    local d=$KAFKA_BROKER_DIR
    cat >"$d/server.properties" <<EOF
# single node, KRaft: broker and controller in one process (a static one-voter quorum)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_BROKER_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_BROKER_PORT,CONTROLLER://127.0.0.1:$KAFKA_BROKER_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_BROKER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$d/data
auto.create.topics.enable=false
delete.topic.enable=true
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.retention.check.interval.ms=5000
# after a SIGKILL the restarted broker cannot register until the dead one's session has
# expired (DUPLICATE_BROKER_REGISTRATION): 4 s instead of 9 s
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
EOF
    local layout='%d{HH:mm:ss.SSS} %p %m (%c)%n'
    cat >"$d/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $d/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = $layout
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
EOF
    cat >"$d/tools-log4j2.properties" <<EOF
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = $layout
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF
    local cluster_id
    cluster_id=$(python3 -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
    # (joined to its option: an id starting with "-", 1 in 64, would read as an option)
    if ! _kafka_tool kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$d/server.properties" \
        >"$d/format.log" 2>&1; then
        cat "$d/format.log" >&2
        _kafka_broker_log "could not format the KRaft log dir $d/data"
        kafka_broker_stop
        return 1
    fi
    if ! _kafka_broker_launch; then
        kafka_broker_stop
        return 1
    fi
    KAFKA_BROKERS=127.0.0.1:$KAFKA_BROKER_PORT
    export KAFKA_BROKERS
    local t
    for t in "$@"; do
        [[ $t == *:* ]] || { _kafka_broker_log "topic '$t': want NAME:PARTITIONS"; kafka_broker_stop; return 1; }
        kafka_topic_create "${t%%:*}" "${t##*:}" || { kafka_broker_stop; return 1; }
    done
}

# The topic's partitions all have a leader (kcat -L); with N, exactly N of them.
_kafka_topic_ready() { # NAME [N]
    local md n
    md=$(timeout 10 kcat -L -b "$KAFKA_BROKERS" -t "$1" -m 3 2>/dev/null) || return 1
    grep -q "topic \"$1\" with" <<<"$md" || return 1
    grep -q "Broker: \|Err\|error" <<<"$md" && return 1
    n=$(grep -c "partition [0-9]*, leader 1," <<<"$md" || true)
    ((n > 0)) || return 1
    [[ -z ${2:-} ]] || ((n == $2))
}

_kafka_topic_command() { # ARGS...: TopicCommand against our broker; prints its output on failure
    local out
    if ! out=$(_kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA_BROKERS" "$@" 2>&1); then
        printf '%s\n' "$out" >&2
        _kafka_broker_log "TopicCommand $* failed"
        return 1
    fi
}

kafka_topic_create() { # NAME PARTITIONS: returns once every partition has a leader
    _kafka_topic_command --create --topic "$1" --partitions "$2" --replication-factor 1 || return 1
    _kafka_broker_wait_for 30 _kafka_topic_ready "$1" "$2" ||
        { _kafka_broker_log "topic $1: $2 partitions with a leader not seen within 30s"; return 1; }
}

kafka_topic_add_partitions() { # NAME TOTAL (the new partition count, as Kafka wants it)
    _kafka_topic_command --alter --topic "$1" --partitions "$2" || return 1
    _kafka_broker_wait_for 30 _kafka_topic_ready "$1" "$2" ||
        { _kafka_broker_log "topic $1: $2 partitions not seen within 30s"; return 1; }
}

kafka_delete_records() { # TOPIC PARTITION OFFSET: the log start moves to OFFSET, as retention would
    local f out
    f=$(mktemp)
    printf '{"version":1,"partitions":[{"topic":"%s","partition":%d,"offset":%d}]}\n' "$1" "$2" "$3" >"$f"
    if ! out=$(_kafka_tool org.apache.kafka.tools.DeleteRecordsCommand --bootstrap-server "$KAFKA_BROKERS" \
        --offset-json-file "$f" 2>&1); then
        rm -f "$f"
        printf '%s\n' "$out" >&2
        _kafka_broker_log "DeleteRecordsCommand $1[$2] before $3 failed"
        return 1
    fi
    rm -f "$f"
}

_kafka_topic_gone() { ! timeout 10 kcat -L -b "$KAFKA_BROKERS" -t "$1" -m 3 2>/dev/null | grep -q "partition [0-9]*, leader"; }

kafka_topic_delete() { # NAME: returns once the metadata no longer lists its partitions
    _kafka_topic_command --delete --topic "$1" || return 1
    _kafka_broker_wait_for 30 _kafka_topic_gone "$1" ||
        { _kafka_broker_log "topic $1 still listed 30s after deletion"; return 1; }
}

_kafka_broker_wait_gone() { # SECONDS
    local tries=$(($1 * 10))
    while ((tries-- > 0)); do
        _kafka_broker_alive || return 0
        sleep 0.1
    done
    return 1
}

# Ends the JVM, keeps the scratch dir (data, logs, config): SIG then SIGKILL after a bound.
_kafka_broker_end() { # SIGNAL
    [[ -n $KAFKA_BROKER_PID ]] || return 0
    # stderr off while the JVM is reaped: bash would print a "Killed" job notice there
    _kafka_broker_end_quiet "$1" 3>&2 2>/dev/null
}

_kafka_broker_end_quiet() { # SIGNAL (fd 3: the caller's stderr)
    local rc=0
    kill -CONT "$KAFKA_BROKER_PID" || true # a paused JVM cannot act on SIGTERM
    kill -"$1" "$KAFKA_BROKER_PID" || true
    if ! _kafka_broker_wait_gone "$KAFKA_BROKER_STOP_TIMEOUT"; then
        _kafka_broker_log "pid $KAFKA_BROKER_PID still there ${KAFKA_BROKER_STOP_TIMEOUT}s after SIG$1; killing it" 2>&3
        kill -KILL "$KAFKA_BROKER_PID" || true
    fi
    wait "$KAFKA_BROKER_PID" || rc=$?
    KAFKA_BROKER_PID=
    return $rc
}

# Idempotent, so it can be both called and registered with trap. Returns 0 after a clean
# exit (Kafka exits 143 on SIGTERM: counted as clean).
kafka_broker_stop() {
    local rc=0
    _kafka_broker_end TERM || rc=$?
    ((rc == 143)) && rc=0
    if [[ -n $KAFKA_BROKER_DIR ]]; then
        if [[ ${KAFKA_BROKER_KEEP:-0} == 1 ]]; then
            _kafka_broker_log "kept $KAFKA_BROKER_DIR (KAFKA_BROKER_KEEP=1)"
        else
            rm -rf "$KAFKA_BROKER_DIR"
        fi
    fi
    KAFKA_BROKER_DIR=
    unset KAFKA_BROKERS
    return $rc
}

# Fault injection. down/kill keep the data; up starts the same broker again (same ports,
# same log dir) and returns once it serves metadata.
kafka_broker_down() {
    _kafka_broker_alive || { _kafka_broker_log "not running"; return 1; }
    _kafka_broker_end TERM || true
}

kafka_broker_kill() {
    _kafka_broker_alive || { _kafka_broker_log "not running"; return 1; }
    _kafka_broker_end KILL || true
}

kafka_broker_up() {
    [[ -n $KAFKA_BROKER_DIR ]] || { _kafka_broker_log "never started"; return 1; }
    _kafka_broker_alive && { _kafka_broker_log "already up (pid $KAFKA_BROKER_PID)"; return 1; }
    _kafka_broker_launch
}

kafka_broker_restart() {
    if _kafka_broker_alive; then kafka_broker_down || return 1; fi
    kafka_broker_up
}

kafka_broker_pause() {
    _kafka_broker_alive || { _kafka_broker_log "not running"; return 1; }
    kill -STOP "$KAFKA_BROKER_PID"
}

kafka_broker_resume() {
    _kafka_broker_alive || { _kafka_broker_log "not running"; return 1; }
    kill -CONT "$KAFKA_BROKER_PID"
}
