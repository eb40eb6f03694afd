// Package kafkaref runs Apache Kafka's own broker as a child process: one
// combined KRaft node (broker and controller), formatted at start, on
// loopback ports, with its data and log under a directory the caller
// gives. It is the reference Skein is compared with: the differential tests
// (tests/diff) send both the same requests, and the broker benchmark
// (tests/bench) can measure it beside Skein.
//
// The broker's jars come from Maven Central through pom.xml in this
// directory; Classpath resolves them (it runs mvn), or the caller passes a
// classpath it built itself:
//
//	mvn -q -B -f tests/kafkaref/pom.xml package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
//
// The caller's duties:
//  1. Call Start with a directory it owns (empty or not yet made), the
//     classpath, and any server.properties to add or override
//     (StartListeners to add listeners, SASL_SSL say, with their settings).
//  2. Talk to Addr() (PLAINTEXT, no authentication), or to Listener(name),
//     once Start returns: the broker has answered ApiVersions and lists
//     itself in Metadata.
//  3. Call Stop once, always (a failed test too), so that no JVM outlives
//     the caller. Cmd stays valid after Stop for its ProcessState.
//
// Nothing here is safe for concurrent use except Addr, Listener and Log.
package kafkaref

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Version is the Kafka release pom.xml pins.
const Version = "4.2.1"

// Heap is the JVM's heap, minimum and maximum alike: a test machine runs the
// broker beside Skein, and Kafka's own scripts default to 1 GiB too.
const Heap = "1g"

// StartTimeout bounds Start's wait for the broker to answer; the JVM and a
// fresh KRaft quorum usually take a few seconds.
const StartTimeout = 60 * time.Second

// StopTimeout bounds Stop's wait after SIGTERM before it kills the JVM.
const StopTimeout = 20 * time.Second

// ClusterID is the cluster id the storage is formatted with (a base64 UUID,
// as `kafka-storage random-uuid` prints one).
const ClusterID = "c2tlaW4ta2Fma2FyZWYwMQ"

// Kafka is a running broker started by Start.
type Kafka struct {
	// Cmd is the JVM's process, for its pid (CPU time) and exit status.
	Cmd *exec.Cmd

	dir       string
	addr      string
	listeners map[string]string // by name, PLAINTEXT's too: host:port
	log       string
	done      chan struct{} // closed once Cmd.Wait returned
	err       error         // Cmd.Wait's result, set before done closes
}

// Addr is the broker's PLAINTEXT listener, host:port.
func (k *Kafka) Addr() string { return k.addr }

// Listener is the address, host:port, of the listener named name
// (StartListeners), "" when there is none.
func (k *Kafka) Listener(name string) string { return k.listeners[name] }

// Log is the path of the file that holds the JVM's output (the broker's
// log4j2 log goes to its stdout).
func (k *Kafka) Log() string { return k.log }

// Classpath resolves the broker's jars with Maven from the pom.xml in
// pomDir and returns the classpath (the contents of
// pomDir/target/classpath.txt).
func Classpath(pomDir string) (string, error) {
	// NB: mvn reads a relative output file against the pom's directory,
	// not ours.
	pomDir, err := filepath.Abs(pomDir)
	if err != nil {
		return "", fmt.Errorf("kafkaref: %w", err)
	}
	out := filepath.Join(pomDir, "target", "classpath.txt")
	cmd := exec.Command("mvn", "-q", "-B", "-Dstyle.color=never", "-f", filepath.Join(pomDir, "pom.xml"),
		"package", "dependency:build-classpath", "-Dmdep.outputFile="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kafkaref: mvn: %w\n%s", err, b)
	}
	cp, err := os.ReadFile(out)
	if err != nil {
		return "", fmt.Errorf("kafkaref: %w", err)
	}
	return strings.TrimSpace(string(cp)), nil
}

// Start formats a KRaft node's storage under dir and starts the broker on
// it, with props added to (or overriding) the properties below, and returns
// once it serves. On failure it stops what it started and its error ends
// with the last lines of the broker's log.
func Start(dir, classpath string, props map[string]string) (*Kafka, error) {
	return StartListeners(dir, classpath, nil, props)
}

// StartListeners is Start with Kafka listeners beside PLAINTEXT: protocols
// maps each one's name to its security protocol (SASL_SSL: SASL_SSL), and
// each listens, advertised as it is, on a loopback port of its own, which
// Listener returns; props carries their TLS and SASL settings. NB: the
// ports are picked here (Kafka cannot report one it chose), so a listener
// cannot be added through props, which would have to name them.
func StartListeners(dir, classpath string, protocols map[string]string, props map[string]string) (*Kafka, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	ports, err := freePorts(2 + len(protocols))
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	controller := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	listeners := map[string]string{"PLAINTEXT": addr}
	advertised, protocolMap := "PLAINTEXT://"+addr, "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	for i, name := range slices.Sorted(maps.Keys(protocols)) {
		listeners[name] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2+i]))
		advertised += "," + name + "://" + listeners[name]
		protocolMap += "," + name + ":" + protocols[name]
	}
	all := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          "1",
		"controller.quorum.voters":                         "1@" + controller,
		"listeners":                                        advertised + ",CONTROLLER://" + controller,
		"advertised.listeners":                             advertised,
		"listener.security.protocol.map":                   protocolMap,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"log.dirs":                                         filepath.Join(dir, "data"),
		"metadata.log.dir":                                 filepath.Join(dir, "metadata"),
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		// NB: min.insync.replicas is left at its default, 1: set here it
		// would show as a static broker config in DescribeConfigs.
	}
	maps.Copy(all, props)
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, all[k])
	}
	properties := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(properties, []byte(sb.String()), 0o644); err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(log4jConfig), 0o644); err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	logPath := filepath.Join(dir, "kafka.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("kafkaref: %w", err)
	}
	defer logFile.Close() // the children hold their own descriptors

	java := func(args ...string) *exec.Cmd {
		cmd := exec.Command("java", append([]string{
			"-Xms" + Heap, "-Xmx" + Heap, "-XX:+UseG1GC", "-Djava.awt.headless=true",
			"-Dlog4j2.configurationFile=" + log4j,
			"-cp", classpath,
		}, args...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		return cmd
	}
	format := java("kafka.tools.StorageTool", "format", "--ignore-formatted",
		"-t", ClusterID, "-c", properties)
	if err := format.Run(); err != nil {
		return nil, fmt.Errorf("kafkaref: format the storage: %w\n%s", err, tail(logPath))
	}

	k := &Kafka{Cmd: java("kafka.Kafka", properties), dir: dir, addr: addr, listeners: listeners, log: logPath, done: make(chan struct{})}
	if err := k.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("kafkaref: start java: %w", err)
	}
	go func() {
		k.err = k.Cmd.Wait()
		close(k.done)
	}()
	if err := k.waitServing(); err != nil {
		k.Stop()
		return nil, fmt.Errorf("kafkaref: %w\n%s", err, tail(logPath))
	}
	return k, nil
}

// waitServing polls, within StartTimeout, until the broker answers
// ApiVersions and lists itself in Metadata (a KRaft broker opens its
// listener before it is unfenced; a CreateTopics before then fails).
func (k *Kafka) waitServing() error {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var last error
	for {
		select {
		case <-k.done:
			return fmt.Errorf("the broker exited during start: %v", k.err)
		case <-ctx.Done():
			return fmt.Errorf("the broker did not serve %s within %v: %v", k.addr, StartTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
		if last = probe(ctx, k.addr); last == nil {
			return nil
		}
	}
}

// probe asks the broker at addr for its API versions and its metadata,
// with a fresh client each time, so that no retry state carries over.
func probe(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if av.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", av.ErrorCode)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(md.Brokers) == 0 || md.ControllerID < 0 {
		return errors.New("metadata lists no broker or no controller yet")
	}
	return nil
}

// Stop sends the broker SIGTERM (a controlled shutdown) and waits up to
// StopTimeout for it to exit, then kills it. It returns the exit status
// unless the broker had to be killed, which is an error too.
func (k *Kafka) Stop() error {
	select {
	case <-k.done:
		return k.err
	default:
	}
	_ = k.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		// The JVM exits with 143 (128+SIGTERM) when its shutdown hooks
		// ran; that is a clean stop.
		var ee *exec.ExitError
		if errors.As(k.err, &ee) && ee.ExitCode() == 143 {
			return nil
		}
		return k.err
	case <-time.After(StopTimeout):
		_ = k.Cmd.Process.Kill()
		<-k.done
		return fmt.Errorf("kafkaref: the broker did not stop within %v of SIGTERM and was killed", StopTimeout)
	}
}

// freePorts asks the kernel for n free loopback ports. NB: they are closed
// again before Kafka binds them (Kafka cannot report a port it chose), so
// another process could take one in between; Start then fails with the
// broker's bind error in its log.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kafkaref: free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail returns the last lines of the file at path, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "--- last lines of " + path + "\n" + strings.Join(lines, "\n")
}

// log4jConfig sends the broker's log, at INFO, to its stdout (the log
// file Start opens); the request and state-change loggers stay at WARN.
const log4jConfig = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
`
