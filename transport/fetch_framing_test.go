package transport

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// randomBytes are the bytes records are cut from.
var randomBytes = func() []byte {
	b := make([]byte, 2*writeChunk)
	rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}()

// randomFetchResponse returns a Fetch response of the given version with
// random fields, tags and record bytes of random sizes (none, a few bytes,
// and sizes around the uvarint and write-chunk boundaries).
func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = rng.Int32()
	resp.ErrorCode = int16(rng.IntN(3))
	resp.SessionID = rng.Int32()
	flexible := version >= 12
	if flexible && rng.IntN(3) == 0 {
		resp.UnknownTags.Set(uint32(10+rng.IntN(5)), []byte("top"))
	}
	if version >= 16 && rng.IntN(2) == 0 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 3, "h", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	sizes := []int{0, 0, 1, 5, 126, 127, 128, 200, 16383, 16384, 16385, 70000}
	for range 1 + rng.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(rune('a' + rng.IntN(26)))
		t.TopicID[rng.IntN(16)] = byte(rng.IntN(256))
		if flexible && rng.IntN(4) == 0 {
			t.UnknownTags.Set(20, []byte{1, 2})
		}
		for range rng.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32N(100)
			p.ErrorCode = int16(rng.IntN(2))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			if rng.IntN(3) == 0 {
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 9}}
			}
			p.PreferredReadReplica = rng.Int32N(3) - 1
			if flexible && rng.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 4, 100
			}
			if flexible && rng.IntN(3) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 2
			}
			if flexible && rng.IntN(4) == 0 {
				p.UnknownTags.Set(30, []byte("x"))
			}
			n := sizes[rng.IntN(len(sizes))]
			if rng.IntN(40) == 0 {
				n = writeChunk + 3 // more than one write of the copy path
			}
			off := rng.IntN(len(randomBytes) - n + 1)
			p.RecordBatches = randomBytes[off : off+n : off+n]
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// moveToFile returns a fetchResponse like resp whose records are in f
// instead of memory, and resp's records, by partition.
func moveToFile(t *testing.T, resp *kmsg.FetchResponse, f vfs.File) *fetchResponse {
	t.Helper()
	cp := *resp
	cp.Topics = nil
	fr := &fetchResponse{FetchResponse: &cp}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pos := fi.Size()
	for _, rt := range resp.Topics {
		ct := rt
		ct.Partitions = nil
		for _, p := range rt.Partitions {
			sl := store.Slice{}
			if len(p.RecordBatches) > 0 {
				// Garbage around each section: a wrong offset shows.
				if _, err := f.WriteAt([]byte("junk"), pos); err != nil {
					t.Fatal(err)
				}
				pos += 4
				if _, err := f.WriteAt(p.RecordBatches, pos); err != nil {
					t.Fatal(err)
				}
				sl = store.Slice{File: f, Pos: pos, Size: int64(len(p.RecordBatches))}
				pos += sl.Size
			}
			p.RecordBatches = []byte{}
			ct.Partitions = append(ct.Partitions, p)
			fr.slices = append(fr.slices, sl)
		}
		cp.Topics = append(cp.Topics, ct)
	}
	return fr
}

// wantFrame is what a writer must send for resp: kmsg's encoding with the
// records inline, after the response header.
func wantFrame(resp *kmsg.FetchResponse, corr int32) []byte {
	p := &pending{corr: corr, key: 1, flexible: resp.IsFlexible()}
	b := resp.AppendTo(header(nil, p))
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// TestFetchFramingMatchesKmsg checks the zero-copy encoding against kmsg's:
// for random responses of every version, the framing with each file
// section put in its place is byte for byte kmsg's AppendTo with the
// records inline, and so is what the writer sends over a socket, by
// sendfile or by copying.
func TestFetchFramingMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	osFile, err := vfs.Default.Create(filepath.Join(dir, "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer osFile.Close()
	mem := vfs.NewCrashableMem()
	memFile, err := mem.Create("records")
	if err != nil {
		t.Fatal(err)
	}
	tcpClient, tcpServer := tcpPair(t)
	pipeClient, pipeServer := net.Pipe()
	defer pipeClient.Close()
	defer pipeServer.Close()
	for version := int16(4); version <= 18; version++ {
		for i := range 16 {
			resp := randomFetchResponse(rng, version)
			want := wantFrame(resp, int32(i))
			file := vfs.File(osFile)
			if i%3 == 2 {
				file = memFile
			}
			fr := moveToFile(t, resp, file)
			p := &pending{corr: int32(i), key: 1, flexible: resp.IsFlexible()}

			// The inline AppendTo is kmsg's.
			if got := wantFrameOf(fr, p); !bytes.Equal(got, want) {
				t.Fatalf("v%d #%d: AppendTo differs from kmsg's", version, i)
			}
			// The framing with the sections put back is kmsg's.
			frame, secs, _, ok := fr.appendFraming(header(nil, p), nil)
			if !ok {
				t.Fatalf("v%d #%d: framing not built", version, i)
			}
			var got []byte
			prev := 0
			size := int64(len(frame) - 4)
			for _, s := range secs {
				got = append(got, frame[prev:s.at]...)
				b := make([]byte, s.Size)
				if _, err := s.File.ReadAt(b, s.Pos); err != nil {
					t.Fatal(err)
				}
				got = append(got, b...)
				prev = s.at
				size += s.Size
			}
			got = append(got, frame[prev:]...)
			binary.BigEndian.PutUint32(got, uint32(size))
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d #%d: spliced framing differs from kmsg's encoding", version, i)
			}

			// What the writer sends, by each path.
			for _, path := range []struct {
				name        string
				client, srv net.Conn
				sendfileMin int64
			}{
				{"sendfile", tcpClient, tcpServer, 1},
				{"copy", tcpClient, tcpServer, math.MaxInt64},
				{"pipe", pipeClient, pipeServer, 1},
			} {
				old := sendfileMin.Swap(path.sendfileMin)
				got := writeAndRead(t, path.srv, path.client, fr, p, len(want))
				sendfileMin.Store(old)
				if !bytes.Equal(got, want) {
					t.Fatalf("v%d #%d %s: the writer sent something else than kmsg's encoding", version, i, path.name)
				}
			}
		}
	}
}

func wantFrameOf(fr *fetchResponse, p *pending) []byte {
	b := fr.AppendTo(header(nil, p))
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// writeAndRead writes one response with an output on srv and reads n bytes
// from client.
func writeAndRead(t *testing.T, srv, client net.Conn, resp kmsg.Response, p *pending, n int) []byte {
	t.Helper()
	got := make([]byte, n)
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(client, got)
		read <- err
	}()
	o := newOutput(srv, zerolog.Nop())
	err := o.response(p, resp)
	if err == nil {
		err = o.flush()
	}
	o.release()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	return got
}

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestSendfileFromClosedFileFails checks that a section whose file was
// closed (a response that waited longer than file.delete.delay.ms) fails
// the write instead of sending other bytes.
func TestSendfileFromClosedFileFails(t *testing.T) {
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte{7}, 100<<10)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = []byte{}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	fr := &fetchResponse{FetchResponse: resp, slices: []store.Slice{{File: f, Pos: 0, Size: 100 << 10}}}
	f.Close()
	_, srv := tcpPair(t)
	for _, min := range []int64{1, math.MaxInt64} {
		old := sendfileMin.Swap(min)
		o := newOutput(srv, zerolog.Nop())
		err := o.response(&pending{corr: 1, key: 1, flexible: true}, fr)
		sendfileMin.Store(old)
		if err == nil {
			t.Fatalf("sendfileMin %d: writing from a closed file succeeded", min)
		}
	}
}

// TestFetchWriteAllocs guards the write path of a Fetch response: its
// allocations do not grow with the records it carries (no copy of them is
// allocated; they are read into the pooled buffer).
func TestFetchWriteAllocs(t *testing.T) {
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(randomBytes); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 16
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	var slices []store.Slice
	for i := range 4 {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches = int32(i), []byte{}
		rt.Partitions = append(rt.Partitions, rp)
		slices = append(slices, store.Slice{File: f, Pos: int64(i) << 19, Size: 1 << 19})
	}
	resp.Topics = append(resp.Topics, rt)
	fr := &fetchResponse{FetchResponse: resp, slices: slices}
	o := newOutput(discardConn{}, zerolog.Nop())
	p := &pending{corr: 1, key: 1, flexible: true}
	// The connection keeps its buffer while it writes: the pool, which
	// drops buffers at random under the race detector, stays out of the
	// count.
	o.take()
	defer o.release()
	allocs := testing.AllocsPerRun(20, func() {
		if err := o.response(p, fr); err != nil {
			t.Fatal(err)
		}
		if err := o.flush(); err != nil {
			t.Fatal(err)
		}
	})
	// The placeholders' offsets, the section list, a closure: none per
	// byte or per write.
	if allocs > 4 {
		t.Fatalf("%.0f allocations to write a 2 MiB Fetch response", allocs)
	}
}

// discardConn is a net.Conn that accepts every write.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }
