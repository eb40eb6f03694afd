package transport_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
	"github.com/skeinlog/skein/partition/store"
)

// frame encodes a request as a client would send it.
func frame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func seedFrames(t testing.TB) [][]byte {
	batch, err := store.AppendBatch(nil, store.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]store.Record{{Key: []byte("k"), Value: []byte("v")}}, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("fuzz")
	meta.Topics = append(meta.Topics, mt)
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "fuzz"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes, fetch.SessionEpoch = 10, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "fuzz"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "fuzz"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "fuzz2", 2, 1
	ct.Topics = append(ct.Topics, ctt)
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups, cgd.IncludeAuthorizedOperations = []string{"fuzz", ""}, true
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = "fuzz", "m1", []string{"fuzz"}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.MaxWaitMillis, sf.MaxRecords, sf.ShareSessionEpoch = kmsg.StringPtr("fuzz"), kmsg.StringPtr("m1"), 10, 10, 0
	sft := kmsg.NewShareFetchRequestTopic()
	sfp := kmsg.NewShareFetchRequestTopicPartition()
	sft.Partitions = append(sft.Partitions, sfp)
	sf.Topics = append(sf.Topics, sft)
	sfAck := kmsg.NewPtrShareFetchRequest()
	*sfAck = *sf
	sfAck.ShareSessionEpoch = 1
	ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 3, []int8{1, 2, 3, 0}
	sfAck.Topics = []kmsg.ShareFetchRequestTopic{{Partitions: []kmsg.ShareFetchRequestTopicPartition{{AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{ab}}}}}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr("fuzz"), kmsg.StringPtr("m1"), -1
	return [][]byte{
		frame(kmsg.NewPtrApiVersionsRequest(), 3, 1),
		frame(kmsg.NewPtrApiVersionsRequest(), 0, 2),
		frame(meta, 12, 3),
		frame(meta, 1, 4),
		frame(produce, 9, 5),
		frame(produce, 3, 6),
		frame(fetch, 12, 7),
		frame(fetch, 4, 8),
		frame(lo, 7, 9),
		frame(ct, 5, 10),
		frame(kmsg.NewPtrInitProducerIDRequest(), 4, 11),
		frame(cgd, 1, 12),
		frame(sgh, 1, 13),
		frame(sf, 2, 14),
		frame(sfAck, 2, 15),
		frame(sa, 2, 16),
	}
}

// FuzzRequests feeds arbitrary bytes to a node's Kafka listener, as one
// client connection. Whatever the bytes, the node must answer or close the
// connection in bounded time (no hang), never crash, and keep serving other
// clients.
func FuzzRequests(f *testing.F) {
	seeds := seedFrames(f)
	for _, s := range seeds {
		f.Add(s)
	}
	var all []byte
	for _, s := range seeds {
		all = append(all, s...)
	}
	f.Add(all) // pipelined
	f.Add(append(seeds[4][:30:30], seeds[0]...))

	cfg := configs.Default()
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	n := startFuzzNode(f, cfg)
	f.Fuzz(func(t *testing.T, data []byte) { answersOrCloses(t, n.Addr().String(), data, seeds[0]) })
}

// startFuzzNode starts a node of cfg (its data and admin listener are the
// fuzz run's), stopped when the run ends.
func startFuzzNode(f *testing.F, cfg configs.Node) *node.Node {
	f.Helper()
	cfg.DataDir = filepath.Join(f.TempDir(), "data")
	cfg.AdminListen = "127.0.0.1:0"
	n, err := node.Start(cfg, zerolog.Nop())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		// Not f.Context(): it is cancelled by the time cleanups run, and the
		// node must be stopped before its data directory is removed.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			f.Error(err)
		}
	})
	return n
}

// answersOrCloses sends data to addr as one client connection: whatever
// the bytes, the node must answer or close the connection in bounded time
// (no hang), and then still answer apiVersions on a new one.
func answersOrCloses(t *testing.T, addr string, data, apiVersions []byte) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(data); err != nil {
		return // the node closed on a bad prefix: fine
	}
	nc.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(io.Discard, nc); err != nil {
		t.Fatalf("no answer or close within the deadline: %v", err)
	}
	ok, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	ok.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := ok.Write(apiVersions); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(ok, size[:]); err != nil {
		t.Fatalf("node stopped answering ApiVersions: %v", err)
	}
}

// FuzzBeforeSASLAuthentication feeds arbitrary bytes to a SASL listener
// before authentication: oversize, truncated and garbage SASL frames.
// The node must answer or close in bounded time, never crash, and keep
// serving.
func FuzzBeforeSASLAuthentication(f *testing.F) {
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Mechanism = "PLAIN"
	good, bad := kmsg.NewPtrSASLAuthenticateRequest(), kmsg.NewPtrSASLAuthenticateRequest()
	good.SASLAuthBytes, bad.SASLAuthBytes = []byte("\x00alice\x00alice-secret"), []byte("\x00\x00\x00\x00")
	scramHandshake := kmsg.NewPtrSASLHandshakeRequest()
	scramHandshake.Mechanism = "SCRAM-SHA-256"
	scramFirst, scramFinal := kmsg.NewPtrSASLAuthenticateRequest(), kmsg.NewPtrSASLAuthenticateRequest()
	scramFirst.SASLAuthBytes = []byte("n,,n=alice,r=abcdef")
	scramFinal.SASLAuthBytes = []byte("c=biws,r=abcdefXYZ,p=AAAA")
	seeds := [][]byte{
		frame(kmsg.NewPtrApiVersionsRequest(), 3, 1),
		frame(handshake, 1, 2),
		frame(good, 2, 3),
		frame(bad, 0, 4),
		frame(kmsg.NewPtrMetadataRequest(), 12, 5),
		binary.BigEndian.AppendUint32(nil, 1<<30),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(append(append(append([]byte(nil), seeds[1]...), seeds[2]...), seeds[4]...)) // authenticated, then Metadata
	f.Add(append(append([]byte(nil), seeds[1]...), seeds[3]...))
	f.Add(append(append(frame(scramHandshake, 1, 2), frame(scramFirst, 2, 3)...), frame(scramFinal, 2, 4)...))

	cfg := configs.Default()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
	cfg.EnabledMechanisms = "PLAIN,SCRAM-SHA-256"
	cfg.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
		"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`}}
	cfg.FailedAuthenticationDelayMs = 1
	n := startFuzzNode(f, cfg)
	f.Fuzz(func(t *testing.T, data []byte) {
		answersOrCloses(t, n.ListenerAddr("SASL_PLAINTEXT").String(), data, seeds[0])
	})
}
