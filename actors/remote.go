package actors

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// Messages between nodes travel as one Frame each (frame.proto): the
// message's stable type id, its msgpack encoding, and, for messages that
// implement RawCarrier, bytes kept out of msgpack. Every such message is a
// pointer to a struct registered with Register and has the one-line method
//
//	func (m *T) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
//
// which is protoactor's hook (remote.RootSerializable) for turning a
// message into its wire form: protoactor's own serializer choice is never
// used when sending.
//
// A frame the receiving binary cannot turn back into a message (an id it
// does not know, a body that does not decode) is delivered to the target
// as *Unknown. Returning an error instead would make protoactor tear down
// the whole connection and lose every message behind it.

// Serialized is a message in its wire form (a *Frame).
type Serialized = remote.RootSerialized

// RawCarrier is a message that carries bytes outside its msgpack body
// (the record batches of a RemoteAppend, a raft message): Raw returns
// them for sending, SetRaw hands the received ones to a decoded message.
// The field holding them is tagged `msgpack:"-"`.
type RawCarrier interface {
	Raw() []byte
	SetRaw([]byte)
}

// Origin says which node, in which incarnation, sent a message. Messages
// between nodes embed it: remoting delivers to whatever process now has
// the address, so a receiver fences a message from an incarnation it no
// longer trusts by this, not by the connection.
type Origin struct {
	Node        int32  `msgpack:"node"`
	Incarnation uint64 `msgpack:"inc"`
}

// Unknown is what a target receives for a frame this binary cannot
// decode: an unregistered type id (a newer peer) or a body that does not
// decode as its type.
type Unknown struct {
	TypeID uint32
	Reason string
}

// Serialize refuses: an Unknown is never sent on.
func (u *Unknown) Serialize() (Serialized, error) {
	return nil, fmt.Errorf("actors: an Unknown frame (type %d) cannot be sent", u.TypeID)
}

var wire struct {
	sync.RWMutex
	byID   map[uint32]reflect.Type // the struct type
	byType map[reflect.Type]uint32
	counts map[uint32]*frameCounts
}

// frameCounts count one type's frames, for RemoteFrames.
type frameCounts struct{ sent, received atomic.Uint64 }

// unknownFrames counts the frames received as *Unknown.
var unknownFrames atomic.Uint64

// FrameCount is how many frames of one message type this process sent
// and received.
type FrameCount struct {
	Type           string
	Sent, Received uint64
}

// RemoteFrames returns the frames counted per registered type, in type id
// order, and the undecodable ones received, as type "unknown".
func RemoteFrames() []FrameCount {
	wire.RLock()
	defer wire.RUnlock()
	var out []FrameCount
	for _, id := range slices.Sorted(maps.Keys(wire.counts)) {
		c := wire.counts[id]
		out = append(out, FrameCount{Type: wire.byID[id].Name(), Sent: c.sent.Load(), Received: c.received.Load()})
	}
	return append(out, FrameCount{Type: "unknown", Received: unknownFrames.Load()})
}

// Register registers *T as a message that travels between nodes under
// id, which must never change or be reused: nodes of different versions
// talk to each other. It panics on a duplicate id or type (a programming
// error); call it from init.
func Register[T any](id uint32) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("actors: Register(%d): %v is not a struct type", id, t))
	}
	if _, ok := reflect.New(t).Interface().(remote.RootSerializable); !ok {
		panic(fmt.Sprintf("actors: Register(%d): *%v has no Serialize method", id, t))
	}
	wire.Lock()
	defer wire.Unlock()
	if wire.byID == nil {
		wire.byID, wire.byType, wire.counts = map[uint32]reflect.Type{}, map[reflect.Type]uint32{}, map[uint32]*frameCounts{}
	}
	if old, ok := wire.byID[id]; ok {
		panic(fmt.Sprintf("actors: Register(%d): id taken by %v", id, old))
	}
	if old, ok := wire.byType[t]; ok {
		panic(fmt.Sprintf("actors: Register(%d): %v registered as %d", id, t, old))
	}
	wire.byID[id], wire.byType[t], wire.counts[id] = t, id, &frameCounts{}
}

// Encode returns m's frame. m must be a pointer to a registered struct.
func Encode(m any) (Serialized, error) {
	t := reflect.TypeOf(m)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("%w: %T", ErrNotRegistered, m)
	}
	wire.RLock()
	id, ok := wire.byType[t.Elem()]
	wire.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNotRegistered, m)
	}
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("actors: encoding %T: %w", m, err)
	}
	f := &Frame{TypeId: id, Body: body}
	if rc, ok := m.(RawCarrier); ok {
		f.Raw = rc.Raw()
	}
	return f, nil
}

// countSent counts a frame of type id that left for a peer.
func countSent(id uint32) {
	wire.RLock()
	c := wire.counts[id]
	wire.RUnlock()
	if c != nil {
		c.sent.Add(1)
	}
}

// typeName names a registered type id, for logs.
func typeName(id uint32) string {
	wire.RLock()
	defer wire.RUnlock()
	if t, ok := wire.byID[id]; ok {
		return t.Name()
	}
	return strconv.FormatUint(uint64(id), 10)
}

// Deserialize returns the frame's message, or an *Unknown; never an
// error (see the package comment on frames).
func (f *Frame) Deserialize() (remote.RootSerializable, error) {
	wire.RLock()
	t, ok := wire.byID[f.TypeId]
	counts := wire.counts[f.TypeId]
	wire.RUnlock()
	if !ok {
		unknownFrames.Add(1)
		return &Unknown{TypeID: f.TypeId, Reason: "unregistered type id"}, nil
	}
	v := reflect.New(t)
	if err := msgpack.Unmarshal(f.Body, v.Interface()); err != nil {
		unknownFrames.Add(1)
		return &Unknown{TypeID: f.TypeId, Reason: fmt.Sprintf("%v: %v", t, err)}, nil
	}
	counts.received.Add(1)
	if rc, ok := v.Interface().(RawCarrier); ok {
		rc.SetRaw(f.Raw)
	}
	return v.Interface().(remote.RootSerializable), nil
}

// Remoting limits. A gRPC message holds one writer batch of frames, so
// the receive limit must exceed RemoteBatch × MaxRemoteMessage, or the
// stream dies and every message on it is lost. A
// frame over MaxRemoteMessage is refused on send (peers.go), so no batch
// can exceed it.
const (
	RemoteBatch = 64
	// MaxRemoteMessage bounds a frame's msgpack body and raw bytes
	// together. The largest messages are cut to half of it: a chunk of a
	// raft snapshot, an observer's batch of entries or snapshot chunk.
	MaxRemoteMessage = 2 << 20
	maxRecvMsgSize   = RemoteBatch*MaxRemoteMessage + 1<<20
)

// RemoteConfig configures a node's remoting endpoint.
type RemoteConfig struct {
	// Listen is the address to bind (host:port; port 0 picks one).
	Listen string
	// Advertise is the address other nodes reach this one at, which goes
	// into this node's PIDs; empty means the bound address.
	Advertise string
	// Links are the faults injected on the links to other nodes; nil
	// for none.
	Links *Links
	// ServerTLS and ClientTLS, when set, make remoting mutual TLS: a peer
	// must present a certificate ServerTLS verifies before gRPC reads a
	// byte of its messages, and this node dials with ClientTLS.
	ServerTLS, ClientTLS *tls.Config
}

// Remote is a node's running remoting.
type Remote struct {
	*remote.Remote
	peers *peers
}

// QueuedBytes returns the bytes of frames queued for each peer, by its
// address.
func (r *Remote) QueuedBytes() map[string]int64 { return r.peers.QueuedBytes() }

// StartRemote binds cfg.Listen and starts protoactor remoting on sys with
// Skein's settings: writer batches of RemoteBatch, gRPC limits above a
// batch of the largest frames on both the server and the dialing side,
// and keepalives (which only clean up dead connections: a node's liveness
// is the controller's heartbeat, not remoting's endpoint events). Every
// message to or from another node then passes peers (peers.go): frames
// over MaxRemoteMessage are refused, a peer's queue is bounded, and
// cfg.Links' faults apply whatever sent the message. It returns the
// address other nodes reach it at.
//
// NB: remote.Start replaces gRPC's global logger, which races with gRPC
// traffic already under way in the process: start every node's remoting
// before traffic.
func StartRemote(sys *actor.ActorSystem, cfg RemoteConfig) (*Remote, string, error) {
	// remote.Start panics when it cannot listen; bind first to report it.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("actors: remoting: %w", err)
	}
	bound := ln.Addr().(*net.TCPAddr)
	ln.Close()
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("actors: remoting: %w", err)
	}
	advertise := cfg.Advertise
	if advertise == "" {
		advertise = net.JoinHostPort(bound.IP.String(), strconv.Itoa(bound.Port))
	}
	p := newPeers(cfg.Links, sys.Logger())
	serverOpts := []grpc.ServerOption{
		grpc.RecvBufferPool(grpc.NewSharedBufferPool()),
		grpc.MaxRecvMsgSize(maxRecvMsgSize),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	creds := insecure.NewCredentials()
	if cfg.ServerTLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(cfg.ServerTLS)))
		creds = credentials.NewTLS(cfg.ClientTLS)
	}
	rcfg := remote.Configure(host, bound.Port,
		remote.WithAdvertisedHost(advertise),
		remote.WithEndpointWriterBatchSize(RemoteBatch),
		// The writer's queue is unbounded (peers bounds what enters it);
		// this is only its first allocation (the default preallocates
		// 16 MB per peer).
		remote.WithEndpointWriterQueueSize(1024),
		remote.WithEndpointManagerQueueSize(1024),
		// Received messages are read into pooled buffers: protobuf copies
		// what it keeps (the Frame's bytes) as it decodes, and a buffer per
		// message made half of remoting's allocations.
		remote.WithServerOptions(serverOpts...),
		// NB: WithDialOptions replaces the defaults, insecure credentials
		// included.
		remote.WithDialOptions(
			grpc.WithTransportCredentials(creds),
			grpc.WithRecvBufferPool(grpc.NewSharedBufferPool()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsgSize)),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
			grpc.WithStreamInterceptor(p.clientStream),
		),
	)
	// A PID on another node resolves, once, to peers' process around the
	// one remote.Start's resolver (registered after this one) makes.
	n := len(sys.ProcessRegistry.RemoteHandlers)
	sys.ProcessRegistry.RegisterAddressResolver(p.resolver(func(pid *actor.PID) (actor.Process, bool) {
		for _, h := range sys.ProcessRegistry.RemoteHandlers[n+1:] {
			if proc, ok := h(pid); ok {
				return proc, true
			}
		}
		return nil, false
	}))
	r := remote.NewRemote(sys, rcfg)
	if err := startRemote(r); err != nil {
		return nil, "", err
	}
	// NB: after remote.Start, so that the event reaches protoactor's
	// endpoint manager first (the stream calls subscribers in order).
	sys.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
			p.terminated(e.Address)
		}
	})
	return &Remote{Remote: r, peers: p}, advertise, nil
}

// startRemote runs r.Start, which panics if the port was taken between
// the probe and the bind.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("actors: remoting: %v", p)
		}
	}()
	r.Start()
	return nil
}

// ErrNotRegistered is returned by Encode for a message type never
// registered.
var ErrNotRegistered = errors.New("actors: not a registered message")
