package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/coordinator"
	"github.com/skeinlog/skein/extension"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/security"
	"github.com/skeinlog/skein/share"
	"github.com/skeinlog/skein/transport"
	"github.com/skeinlog/skein/txn"
)

// verifyTimeout bounds a partition leader's wait for a transaction
// coordinator's verification of a transactional batch.
const verifyTimeout = 10 * time.Second

// Node is one running Skein node: its actor system, the tree under its root
// actor node/<id>, its Kafka listener and its admin HTTP listener.
type Node struct {
	cfg configs.Node
	log zerolog.Logger
	// authorizer decides Kafka requests and admin API changes; nil when
	// authorizer.class.name turns none on.
	authorizer *security.Authorizer
	sys        *actor.ActorSystem
	root       *actor.PID
	done       chan struct{} // closed when the root actor has stopped

	image      atomic.Pointer[image.Image]
	quorum     atomic.Pointer[controller.Status]
	firstImage chan struct{} // closed at the first published image naming this broker
	// imageNews gets a value (without blocking) at every published image,
	// for the controlled shutdown to watch.
	imageNews chan struct{}
	imageOnce sync.Once
	// registered is set once an image names this run of the node's
	// broker (publish).
	registered atomic.Bool
	registry   *partition.Registry
	// files is the node-wide descriptor cache every log opens its files
	// through; failures rate-limits the lines logged about storage
	// failures and recoveries.
	files    *vfs.Cache
	failures *logging.Limiter
	// dirLock excludes every other node from data.dir while this one runs.
	dirLock *dirLock
	// logDirs places the node's partitions on its log dirs.
	logDirs *partition.LogDirs
	// syncer makes every partition's appends durable together, with one
	// syncfs(2) of the data directory's filesystem a round.
	syncer *partition.Syncer
	// trash removes deleted partitions' directories in the background.
	trash *partition.Trash
	// swept is set once the node has deleted the partition directories
	// its first current image does not place on it (sweep).
	swept sync.Once
	// replication counts the node's ISR changes and replication bytes.
	replication partition.Stats
	groups      *coordinator.Directory
	// txns maps transactional ids to their coordinator actors; txnStats
	// counts transactions; verifier asks coordinators about transactional
	// batches for this node's partitions; producerIDs hands out ids.
	txns     *txn.Directory
	txnStats txn.Stats
	verifier *txn.Verifier
	// shareStates reaches the share coordinators (share.StateClient);
	// shareAPI is the Kafka API once it serves, which creates
	// __share_group_state for it.
	shareStates *share.StateClient
	// shares maps share groups' partitions led here to their actors;
	// shareStats counts what they do.
	shares      *share.Directory
	shareStats  share.Stats
	shareAPI    atomic.Pointer[transport.API]
	producerIDs producerIDs
	// extensions are the statuses of the node's extension actors;
	// extClient their client of the cluster (positions), which /metrics'
	// consumer lag also asks for other nodes' end offsets (group_lag.go).
	extensions *extension.Runtime
	extClient  extensionClient
	// producerClients are the clients seen producing with each producer
	// id, for the audit extension.
	producerClients *transport.ProducerClients
	children        atomic.Pointer[children]
	// kafka are the node's Kafka listeners, bound at New, the
	// inter-broker one first.
	kafka kafkaListeners
	// limits bound the Kafka listeners' connections.
	limits transport.Limits
	// remote is the node's remoting, nil for a one-node cluster.
	remote *actors.Remote
	// server serves the Kafka listener once the metadata has loaded;
	// serverMu orders that against Stop.
	serverMu sync.Mutex
	server   *transport.Server
	stopping bool
	metrics  *prometheus.Registry
	// faults are the injected faults (none unless the admin API sets
	// some); tree instruments every actor of the node with them and with
	// mailbox and restart counters.
	faults *actors.Faults
	// links are the injected network faults to other nodes.
	links *actors.Links
	// clock is the node's clock for its partitions and controller: the
	// system's, shifted by a clock fault. disk fails the node's file
	// operations on a disk fault (only a node with chaos.enable reaches
	// its files through it). chaos keeps those faults' lifetimes.
	clock   *clock.Skewed
	disk    *diskFault
	chaos   *chaosState
	tree    *actors.Tree
	admin   *adminServer
	serving atomic.Bool // the Kafka listener serves; cleared when Stop begins

	// peers are the other voters' controllers.
	peers map[int32]*actor.PID
	// filesCap is log.max.open.files in force, and capReason why.
	filesCap  int
	capReason string
	// incarnation tells this run of the node from every earlier one.
	incarnation uint64
	// topicCounters is the node's last reading of its per-topic
	// counters, which consoles on every node ask for.
	topicCounters topicCountersCache

	stopOnce   sync.Once
	refuseOnce sync.Once
	stopErr    error
}

// children are the root actor's children, published for the listener.
type children struct {
	controller, metadata, partitions, groups, txns, appends, shares *actor.PID
}

// startTimeout bounds how long Start waits for the metadata to load.
const startTimeout = 30 * time.Second

// Start creates the data directory, binds the Kafka listener, starts the
// actor tree (controller, metadata, partitions), waits for the cluster
// metadata to load, and then serves clients. cfg must be valid
// (configs.Load validates it). The node runs until Stop.
func Start(cfg configs.Node, log zerolog.Logger) (*Node, error) {
	n, err := prepare(cfg, log)
	if err != nil {
		return nil, err
	}
	if err := n.run(); err != nil {
		return nil, err
	}
	return n, nil
}

// StartAll starts nodes in this process, as node/nodetest's in-process
// clusters do: every node's remoting starts before any node's actors,
// because protoactor's remote start races with remoting traffic already
// under way in the process (actors.StartRemote). The nodes must be of a
// cluster (controller.quorum.voters set). On an error, the nodes started
// are stopped.
func StartAll(cfgs []configs.Node, log zerolog.Logger) ([]*Node, error) {
	var nodes []*Node
	stopAll := func() {
		for _, n := range nodes {
			n.Stop(context.Background())
		}
	}
	for _, cfg := range cfgs {
		if !cfg.Clustered() {
			stopAll()
			return nil, fmt.Errorf("node: StartAll: node %d is not of a cluster", cfg.NodeID)
		}
		n, err := prepare(cfg, log.With().Int32("node", cfg.NodeID).Logger())
		if err != nil {
			stopAll()
			return nil, err
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.run(); err != nil {
			stopAll()
			return nil, err
		}
	}
	return nodes, nil
}

// prepare binds the node's listeners, creates its actor system and starts
// its remoting; run starts its actors.
func prepare(cfg configs.Node, log zerolog.Logger) (*Node, error) {
	lock, err := lockLogDirs(lockedDirs(cfg))
	if err != nil {
		return nil, err
	}
	limits, err := connectionLimits(cfg)
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("node: %w", err)
	}
	var n *Node // the listeners look SCRAM credentials up in its image once it serves
	ln, err := bindKafka(cfg, log, func() *image.Image { return n.image.Load() })
	if err != nil {
		lock.release()
		return nil, err
	}
	n = &Node{cfg: cfg, log: log, done: make(chan struct{}), firstImage: make(chan struct{}), imageNews: make(chan struct{}, 1),
		incarnation: newIncarnation(), dirLock: lock,
		registry: partition.NewRegistry(), groups: &coordinator.Directory{}, txns: &txn.Directory{}, shares: &share.Directory{},
		kafka: ln, limits: limits, metrics: prometheus.NewRegistry(), faults: actors.NewFaults(), links: actors.NewLinks(),
		clock: clock.NewSkewed(clock.Real, 0), disk: &diskFault{}, chaos: newChaosState(), authorizer: authorizer(cfg)}
	n.producerIDs.n = n
	n.extClient.n = n
	n.extensions = extension.NewRuntime()
	n.producerClients = transport.NewProducerClients()
	n.faults.Expired = func(f actors.Fault) {
		log.Warn().Uint64("fault", f.ID).Str("actor", f.Actor).Str("kind", string(f.Kind)).Int("fired", f.Fired).Msg("chaos: actor fault ended")
	}
	n.links.Expired = func(addr string, _ actors.LinkFault) {
		log.Warn().Str("address", addr).Msg("chaos: link fault ended")
	}
	filesCap, capReason := openFilesCap(cfg.LogMaxOpenFiles)
	fsys, disk := vfs.Default, (*diskFault)(nil)
	if cfg.ChaosEnable {
		fsys, disk = vfs.NewErrorFS(fsys, n.disk), n.disk
	}
	n.files = vfs.NewCache(fsys, filesCap)
	n.failures = logging.NewLimiter(20, time.Second)
	// NB: the metadata log's directory is in the first log dir; it is
	// no partition to place.
	if n.logDirs, err = partition.OpenLogDirs(n.files, cfg.LogDirs(), metadataDir); err != nil {
		ln.Close()
		lock.release()
		return nil, fmt.Errorf("node: %w", err)
	}
	n.logDirs.Logger = log
	if n.syncer, err = newSyncer(n.logDirs.Dirs(), disk); err != nil {
		ln.Close()
		lock.release()
		return nil, err
	}
	n.trash = partition.NewTrash(n.files, fsys, n.logDirs.Dirs(), log)
	n.image.Store(image.Empty())
	n.sys = actors.NewSystem(log)
	n.tree = actors.NewTree(n.sys, n.faults)
	n.verifier = &txn.Verifier{System: n.sys, NodeID: cfg.NodeID, Image: n.image.Load, Timeout: verifyTimeout}
	n.shareStates = n.newShareStates()
	n.registerNodeMetrics()
	n.peers = map[int32]*actor.PID{}
	voters, _ := cfg.Voters() // valid: the caller validated cfg
	for _, v := range voters {
		if v.ID != cfg.NodeID {
			n.peers[v.ID] = actor.NewPID(v.Addr, Name(v.ID)+"/controller")
		}
	}
	if cfg.Clustered() {
		// Remoting starts before any traffic (actors.StartRemote), and
		// before the tree, whose PIDs carry its address.
		rcfg := actors.RemoteConfig{Listen: cfg.ClusterListen, Advertise: cfg.ClusterAdvertise, Links: n.links}
		if err = remotingTLS(cfg, log, &rcfg, n.mayActAsBroker); err == nil {
			n.remote, _, err = actors.StartRemote(n.sys, rcfg)
		}
		if err != nil {
			ln.Close()
			n.tree.Close()
			n.sys.Shutdown()
			n.closeDataDir()
			return nil, fmt.Errorf("node: cluster.listen: %w", err)
		}
	}
	// The admin listener comes up before the actor tree, so that /healthz
	// answers and /readyz says why not while the metadata loads.
	if n.admin, err = n.startAdmin(); err != nil {
		ln.Close()
		n.tree.Close()
		n.sys.Shutdown()
		n.closeDataDir()
		n.extClient.close()
		return nil, err
	}
	n.filesCap, n.capReason = filesCap, capReason
	return n, nil
}

// run spawns the actor tree and, once the metadata has loaded, serves:
// a one-node cluster's run waits for that, a clustered node's serves when
// it comes.
func (n *Node) run() error {
	cfg, ln := n.cfg, n.kafka
	props := actor.PropsFromProducer(
		func() actor.Actor { return &rootActor{node: n} },
		// NB: without a guardian, protoactor's default for a root-spawned
		// actor stops it for good after its 11th failure in 10 s.
		actor.WithGuardian(actor.NewOneForOneStrategy(10, time.Minute, rootDecider)),
		// The controller, metadata and partitions actors restart with
		// backoff, and never stop for failing often.
		actor.WithSupervisor(actors.NewBackoffStrategy(actors.Backoff{})),
	)
	root, err := n.tree.SpawnNamed(props, Name(cfg.NodeID))
	if err != nil {
		ln.Close()
		n.closeAdmin()
		n.sys.Shutdown()
		n.closeDataDir()
		n.extClient.close()
		return fmt.Errorf("node: spawning %s: %w", Name(cfg.NodeID), err)
	}
	n.root = root
	if cfg.Clustered() {
		// The metadata comes once a majority of the voters runs, which
		// may be long after this one started: clients connect meanwhile
		// and wait, and /readyz says why.
		go func() {
			select {
			case <-n.firstImage:
				n.serve()
			case <-n.done:
			}
		}()
		n.logStarted()
		return nil
	}
	select {
	case <-n.firstImage:
	case <-n.done:
		ln.Close()
		n.closeAdmin()
		n.closeDataDir()
		return errors.New("node: the actor tree failed to start (see the log)")
	case <-time.After(startTimeout):
		n.Stop(context.Background())
		return errors.New("node: the cluster metadata did not load in time")
	}
	n.serve()
	n.logStarted()
	return nil
}

// announceTo is the Syncer that Produce requests announce their appends
// to: the node's, under durability fsync, where every append waits for a
// round; nil under replicated, where none does.
func (n *Node) announceTo() *partition.Syncer {
	if n.cfg.Durability != configs.DurabilityFsync {
		return nil
	}
	return n.syncer
}

// serve starts the Kafka listener's server.
func (n *Node) serve() {
	cfg, log := n.cfg, n.log
	c := n.children.Load()
	tcfg := transport.DefaultConfig()
	tcfg.Logger = log
	tcfg.MaxRequestBytes = cfg.SocketRequestMaxBytes
	tcfg.MaxUnauthenticatedBytes = cfg.ServerMaxReceiveSize
	tcfg.FailedAuthenticationDelay = time.Duration(cfg.FailedAuthenticationDelayMs) * time.Millisecond
	tcfg.MaxReauth = time.Duration(cfg.ConnectionsMaxReauthMs) * time.Millisecond
	tcfg.Limits = n.limits
	tcfg.IdleTimeout = time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond
	api := transport.NewAPI(transport.Deps{
		System:          n.sys,
		Controller:      c.controller,
		Image:           n.image.Load,
		Partitions:      n.registry,
		Groups:          n.groups,
		GroupsPID:       c.groups,
		Shares:          n.shares,
		SharesPID:       c.shares,
		ShareSettings:   n.shareSettings,
		Txns:            n.txns,
		TxnsPID:         c.txns,
		Verifier:        n.verifier,
		ProducerClients: n.producerClients,
		Appends:         c.appends,
		NewProducerID:   n.producerIDs.take,
		Node:            cfg,
		Quorum:          n.quorumStatus,
		ControllerOf: func(id int32) *actor.PID {
			if id == cfg.NodeID {
				return c.controller
			}
			return n.peers[id]
		},
		Links:       n.links,
		Replication: &n.replication,
		Syncer:      n.announceTo(),
		Logger:      log,
		Failures:    n.failures,
		LogDirs:     n.logDirs,
		Authorizer:  n.authorizer,
		Clock:       n.clock,
	}, transport.NewMetrics(n.metrics))
	if !n.isBroker() {
		api.ServeOnly(transport.ControllerOnlyKeys)
	}
	n.shareAPI.Store(api)
	server := transport.NewServer(tcfg, api)
	n.serverMu.Lock()
	defer n.serverMu.Unlock()
	if n.stopping {
		return
	}
	n.server = server
	for _, l := range n.kafka {
		n.server.Serve(l.serve, l.ln)
	}
	n.serving.Store(true)
	go n.closeIdleFiles()
}

func (n *Node) logStarted() {
	e := n.log.Info().Int32("node.id", n.cfg.NodeID).Strs("log.dirs", n.logDirs.Dirs()).Str("actor", n.root.Id).
		Str("listen", n.Addr().String()).Str("listeners", n.kafka.String()).Str("admin.listen", n.admin.ln.Addr().String()).
		Int("log.max.open.files", n.filesCap).Str("from", n.capReason)
	if n.remote != nil {
		e = e.Str("cluster.listen", n.cfg.ClusterListen).Str("controller.quorum.voters", n.cfg.ControllerQuorumVoters)
	}
	e.Msg("node started")
}

// Name returns the name of a node's root actor, under which its whole actor
// tree is named: node/<id>.
func Name(id int32) string { return fmt.Sprintf("node/%d", id) }

// Addr returns the address the inter-broker Kafka listener is bound to
// (the only one, unless listeners names several).
func (n *Node) Addr() net.Addr { return n.kafka[0].ln.Addr() }

// ListenerAddr returns the address the Kafka listener of that name is
// bound to, nil if the node has none.
func (n *Node) ListenerAddr(name string) net.Addr {
	for _, l := range n.kafka {
		if l.Name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// AdminAddr returns the address the admin HTTP listener is bound to.
func (n *Node) AdminAddr() net.Addr { return n.admin.ln.Addr() }

// Faults returns the node's fault-injection registry, which the admin API
// drives.
func (n *Node) Faults() *actors.Faults { return n.faults }

// Links returns the node's network faults to other nodes, by their
// remoting address (node/nodetest drives them).
func (n *Node) Links() *actors.Links { return n.links }

// ActorSystem returns the node's actor system (node/nodetest sends to
// other nodes' actors from it).
func (n *Node) ActorSystem() *actor.ActorSystem { return n.sys }

// Ready reports whether the node serves clients, as /readyz does.
func (n *Node) Ready() bool { return n.notReady() == "" }

// notReady says why the node is not ready to serve clients, or "" if it
// is: the cluster metadata is loaded and current (an active controller is
// known: a quorum), and the Kafka listener serves.
func (n *Node) notReady() string {
	select {
	case <-n.firstImage:
	default:
		return "the cluster metadata is loading"
	}
	if !n.serving.Load() {
		return "the Kafka listener is not serving"
	}
	if s := n.quorumStatus(); n.cfg.Clustered() && s.Leader < 0 {
		// Its image is of the last moment it knew one: brokers listed
		// live may be gone, and no change can be made.
		since := "ever since it started"
		if !s.NoLeaderSince.IsZero() {
			since = fmt.Sprintf("for %v (since %s), and its metadata is as of then", time.Since(s.NoLeaderSince).Round(time.Millisecond),
				s.NoLeaderSince.UTC().Format(time.RFC3339))
		}
		return "no quorum: this node has known no active controller " + since + ": " + controller.NoLeaderHint
	}
	return failedPartitions(n.registry)
}

// closeAdmin closes the admin listener at once (Start failed) and stops
// the tree's subscription.
func (n *Node) closeAdmin() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.admin.close(ctx)
	n.tree.Close()
}

// Done is closed when the node's root actor has stopped: after Stop, or
// when its supervisor gave up on it after repeated failures, in which case
// the process should exit.
func (n *Node) Done() <-chan struct{} { return n.done }

// Stop stops the node gracefully: /readyz turns 503, the Kafka listener
// stops reading and answers the requests it has read, then the actor tree
// stops (partition logs are synced and closed cleanly, checkpoints
// written), and last the admin listener closes. Stop returns ctx.Err() if
// ctx ends first. Calling it again returns the first result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		n.controlledShutdown(ctx)
		n.serving.Store(false)
		// The admin listener serves until the end, so that /metrics and
		// /readyz can be watched during the stop.
		defer func() {
			if err := n.admin.close(ctx); err != nil {
				n.log.Warn().Err(err).Msg("closing the admin listener")
			}
			n.tree.Close()
		}()
		n.serverMu.Lock()
		n.stopping = true
		server := n.server
		n.serverMu.Unlock()
		if server != nil {
			if err := server.Close(ctx); err != nil {
				n.log.Warn().Err(err).Msg("closing the Kafka listener")
			}
		} else {
			n.kafka.Close()
		}
		// Poison, not Stop: queued messages are handled first. NB: no
		// PoisonFuture, whose Future races under -race (protoactor #1145);
		// the root actor closes done instead.
		n.sys.Root.Poison(n.root)
		select {
		case <-n.done:
		case <-ctx.Done():
			var live []string
			for _, id := range n.tree.Live() {
				if a := n.tree.Find(id); a != nil {
					id = fmt.Sprintf("%s (mailbox %d, restarts %d)", id, a.MailboxLength, a.Restarts)
				}
				live = append(live, id)
			}
			n.stopErr = fmt.Errorf("node: stopping %s: %w; actors still running: %s", n.root.Id, ctx.Err(), strings.Join(live, ", "))
			return
		}
		if n.remote != nil {
			// NB: not graceful: protoactor's graceful shutdown races with its
			// own stream goroutines (endpointReader.suspended, the endpoint
			// manager's map), and the actors that used remoting are
			// stopped by now.
			n.remote.Shutdown(false)
		}
		// NB: Shutdown stops no actor; it only marks the system stopped.
		n.sys.Shutdown()
		n.closeDataDir()
		n.extClient.close()
		n.log.Info().Int32("node.id", n.cfg.NodeID).Msg("node stopped")
	})
	return n.stopErr
}

// closeDataDir ends the node's use of data.dir: its sync rounds and its
// removals of deleted partitions, then its lock, which another node may
// take from then on.
func (n *Node) closeDataDir() {
	n.syncer.Close()
	n.trash.Close()
	n.dirLock.release()
}

// publish is the controller's Publish: store the image for the listener
// and hand it to the metadata actor.
func (n *Node) publish(im *image.Image) {
	n.image.Store(im)
	b, ok := im.Brokers[n.cfg.NodeID]
	current := ok && b.Incarnation == n.incarnation
	observer := !n.cfg.HasRole(configs.RoleController)
	if current {
		n.registered.Store(true)
	}
	// A broker-only node restarted loads the image it kept on disk
	// (controller/observer.go), which may be stale: while the quorum has
	// not registered this run, the image is served to clients (Metadata)
	// but hosts nothing, so that the node leads no partition on the word
	// of an image that others may have moved on from (Kafka's brokers
	// likewise take no partitions before they catch up).
	if c := n.children.Load(); c != nil && c.metadata != nil && (!observer || n.registered.Load()) {
		n.sys.Root.Send(c.metadata, &controller.ImagePublished{Image: im})
	}
	// Clients are served once the image names this run of this node's
	// broker: before, Metadata would not list the node they talk to. A
	// controller-only node has no broker: its first image will do. A
	// broker-only node restarted serves Metadata from the image it kept,
	// which names its earlier run, before the quorum answers; its
	// /readyz says there is no quorum until one does.
	if !n.isBroker() || current || ok && observer {
		n.imageOnce.Do(func() { close(n.firstImage) })
	}
	select {
	case n.imageNews <- struct{}{}:
	default:
	}
}

// shutdownWait bounds the controlled shutdown's wait for the fence: the
// rest of the stop must fit in the time package cli gives it (10 s).
const shutdownWait = 5 * time.Second

// controlledShutdown asks the cluster, before a clustered node stops, to
// fence its broker, which moves its leaderships to other live replicas
// while it still serves (clients that ask it are told NOT_LEADER and go
// to the new leaders); it waits for the fence in its image, at most
// shutdownWait or until ctx ends. A one-node cluster has nowhere to move
// anything and stops at once.
func (n *Node) controlledShutdown(ctx context.Context) {
	ch := n.children.Load()
	if n.remote == nil || ch == nil || !n.isBroker() || !n.Ready() || n.quorumStatus().Leader < 0 {
		return // alone, no broker to fence, not serving, or no quorum to ask
	}
	start := time.Now()
	n.sys.Root.Send(ch.controller, &controller.ShutDown{})
	wait := time.NewTimer(shutdownWait)
	defer wait.Stop()
	for {
		if b, ok := n.image.Load().Brokers[n.cfg.NodeID]; ok && b.Incarnation == n.incarnation && b.Fenced {
			n.log.Info().Dur("took", time.Since(start)).Msg("node: controlled shutdown: leaderships moved")
			return
		}
		select {
		case <-n.imageNews:
		case <-wait.C:
			n.log.Warn().Dur("waited", shutdownWait).Msg("node: controlled shutdown: the cluster did not fence this broker in time; stopping anyway")
			return
		case <-ctx.Done():
			return
		}
	}
}

// refused stops a node the cluster will not take (another live node has
// its id).
func (n *Node) refused(err error) {
	n.refuseOnce.Do(func() {
		n.log.Error().Err(err).Msg("node: refused by the cluster; stopping")
		go n.Stop(context.Background())
	})
}

// quorumStatus returns what the controller last reported of the quorum.
func (n *Node) quorumStatus() controller.Status {
	if s := n.quorum.Load(); s != nil {
		return *s
	}
	return controller.Status{Leader: -1}
}

// rootActor is node/<id>, the root of the node's actor tree:
//
//	node/<id>
//	├── metadata     this node's image of the cluster; tells partitions their role
//	├── partitions   supervisor of the partition actors
//	├── groups       supervisor of the group coordinators, one per group
//	├── txns         supervisor of the transaction coordinators, one per transactional id
//	├── sharestate   the share coordinator, one actor per __share_group_state partition led here
//	├── fetchers     supervisor of the follower fetchers, one per leader node (partition.FetchersProps)
//	├── appends      takes appends and markers from writers on any node (partition.RemoteAppend, RemoteMarker)
//	├── extensions   supervisor of the extension actors, one per source partition this node leads
//	└── controller   this node's seat in the controller quorum
//
// A controller-only node (process.roles=controller) has only the
// controller child.
//
// Supervised by a one-for-one guardian that restarts it up to 10 times a
// minute and then stops it, which closes Node.Done. A restart stops its
// children; Started spawns them again, and they recover from disk. Its
// children, and the children of its supervisors (partitions, groups, txns,
// fetchers, extensions), restart with exponential backoff
// (actors.NewBackoffStrategy): 10 ms doubling to 10 s, reset after a quiet
// minute.
type rootActor struct {
	node *Node
}

func (a *rootActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		if err := a.spawnChildren(c); err != nil {
			panic(err)
		}
	case *actor.Stopped:
		close(a.node.done)
	case *DescribeTopicCounters:
		a.node.answerTopicCounters(c)
	case *PeerLinkFault:
		a.node.answerPeerLink(c, m)
	}
}

func (a *rootActor) spawnChildren(c actor.Context) error {
	n := a.node
	if !n.isBroker() {
		return a.spawnController(c, nil)
	}
	// The tree's spawn middleware instruments every actor spawned here
	// and below (mailbox and restart counters, the fault middleware).
	// A restarted partitions supervisor has lost its children: it asks the
	// metadata actor to host them again.
	var metadata *actor.PID
	partitions, err := c.SpawnNamed(partition.SupervisorProps(partition.SupervisorConfig{
		Registry: n.registry, FS: n.files, Clock: n.clock, Logger: n.log, Failures: n.failures, LogDirs: n.logDirs, Syncer: n.syncer, Stats: &n.replication, Trash: n.trash,
		Restarted: func() { n.sys.Root.Send(metadata, &resync{}) },
	}, actors.NewBackoffStrategy(actors.Backoff{})), "partitions")
	if err != nil {
		return err
	}
	// One actor per consumer group, each rebuilding its group from its
	// __consumer_offsets partition when it (re)starts. Spawned before the
	// metadata actor, which tells it about deleted topics.
	groups, err := c.SpawnNamed(coordinator.SupervisorProps(coordinator.SupervisorConfig{
		Directory:             n.groups,
		MinSessionTimeout:     time.Duration(n.cfg.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:     time.Duration(n.cfg.GroupMaxSessionTimeoutMs) * time.Millisecond,
		OffsetsRetention:      time.Duration(n.cfg.OffsetsRetentionMinutes) * time.Minute,
		InitialRebalanceDelay: time.Duration(n.cfg.GroupInitialRebalanceDelayMs) * time.Millisecond,
		ConsumerTimeouts: func(group string) (time.Duration, time.Duration) {
			var overrides map[string]string
			if im := n.image.Load(); im != nil {
				overrides = im.GroupConfigs[group]
			}
			return configs.GroupTimeouts(n.cfg, overrides)
		},
		AllowUpgrade:   n.cfg.GroupConsumerMigrationPolicy == "upgrade" || n.cfg.GroupConsumerMigrationPolicy == "bidirectional",
		AllowDowngrade: n.cfg.GroupConsumerMigrationPolicy == "downgrade" || n.cfg.GroupConsumerMigrationPolicy == "bidirectional",
		Image:          n.image.Load,
		VerifyTxn: func(id string, producerID int64, epoch int16, p int32, add bool, reply func(*kerr.Error)) {
			n.verifier.Verify(id, producerID, epoch, coordinator.OffsetsTopic, p, add, reply)
		},
		ShareTimeouts: func(group string) (time.Duration, time.Duration) {
			var overrides map[string]string
			if im := n.image.Load(); im != nil {
				overrides = im.GroupConfigs[group]
			}
			s := configs.ShareGroupSettings(n.cfg, overrides)
			return s.SessionTimeout, s.HeartbeatInterval
		},
		ShareMaxSize: int(n.cfg.GroupShareMaxSize),
		StreamsSettings: func(group string) coordinator.StreamsSettings {
			var overrides map[string]string
			if im := n.image.Load(); im != nil {
				overrides = im.GroupConfigs[group]
			}
			s := configs.StreamsGroupSettings(n.cfg, overrides)
			return coordinator.StreamsSettings{SessionTimeout: s.SessionTimeout, HeartbeatInterval: s.HeartbeatInterval,
				NumStandbyReplicas: s.NumStandbyReplicas, InitialRebalanceDelay: s.InitialRebalanceDelay}
		},
		StreamsMaxSize:  int(n.cfg.GroupStreamsMaxSize),
		ShareStates:     groupShareStates{n},
		ShareMemberGone: n.shareMemberGone,
		HighWatermark: func(topic string, p int32) (int64, bool) {
			im := n.image.Load()
			if im == nil {
				return 0, false
			}
			_, v, err := n.registry.Led(im, n.cfg.NodeID, topic, p)
			if err != nil {
				return 0, false
			}
			return v.Log.HighWatermark, true
		},
		Logger: n.log,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "groups")
	if err != nil {
		return err
	}
	// One actor per transactional id, for the __transaction_state
	// partitions this node leads.
	txns, err := c.SpawnNamed(txn.SupervisorProps(txn.SupervisorConfig{
		NodeID: n.cfg.NodeID, Directory: n.txns, Registry: n.registry, Image: n.image.Load,
		Txn: txn.Config{MaxTimeoutMs: n.cfg.TransactionMaxTimeoutMs, IDExpirationMs: n.cfg.TransactionalIDExpirationMs,
			NewProducerID: n.producerIDs.take},
		AbortInterval: time.Duration(n.cfg.TransactionAbortTimedOutCleanupIntervalMs) * time.Millisecond,
		Stats:         &n.txnStats, Logger: n.log,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "txns")
	if err != nil {
		return err
	}
	// The share coordinator: an actor per __share_group_state partition
	// this node leads.
	sharestate, err := n.spawnShareState(c)
	if err != nil {
		return err
	}
	// An actor per share group and partition this node leads, spawned at
	// first use.
	shares, err := n.spawnShares(c)
	if err != nil {
		return err
	}
	// Followers fetch from their leaders' nodes (fetchers/<leader id>),
	// whose Kafka listeners answer them (transport/replica_fetch.go).
	fetchers, err := c.SpawnNamed(partition.FetchersProps(partition.FetcherConfig{
		Origin: actors.Origin{Node: n.cfg.NodeID, Incarnation: n.incarnation}, Registry: n.registry,
		WaitMax:  time.Duration(n.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		MaxBytes: n.cfg.ReplicaFetchResponseMaxBytes, PartMax: n.cfg.ReplicaFetchMaxBytes,
		Links: n.links, Logger: n.log, TLS: n.kafka.followerTLS(), Clock: n.clock,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "fetchers")
	if err != nil {
		return err
	}
	// An actor per source partition of each extension instance, on the
	// node that leads the partition.
	extensions, err := c.SpawnNamed(extension.SupervisorProps(extension.Config{
		NodeID: n.cfg.NodeID, Origin: actors.Origin{Node: n.cfg.NodeID, Incarnation: n.incarnation}, Registry: n.registry,
		Image: n.image.Load, Positions: &n.extClient, ProducerID: n.extensionProducerID, Cluster: extensionCluster{n},
		Runtime: n.extensions, End: n.highWatermark, CommitInterval: time.Duration(n.cfg.ExtensionCommitIntervalMs) * time.Millisecond, Logger: n.log,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "extensions")
	if err != nil {
		return err
	}
	metadata, err = c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &metadataActor{node: n.cfg, logDirs: n.logDirs, incarnation: n.incarnation, partitions: partitions, groups: groups, txns: txns, sharestate: sharestate, fetchers: fetchers, extensions: extensions, registry: n.registry,
			current: n.image.Load, hosted: map[partition.Key]image.TopicID{}, alterISR: n.alterISR,
			sweep: func(im *image.Image) { n.swept.Do(func() { n.sweep(im) }) }}
	}), "metadata")
	if err != nil {
		return err
	}
	// Appends from other nodes (partition.RemoteAppend) come to
	// node/<id>/appends.
	appends, err := c.SpawnNamed(partition.AppendsProps(partition.AppendsConfig{
		NodeID: n.cfg.NodeID, Registry: n.registry, Image: n.image.Load,
		Marked: func(topic string, p int32, m partition.Marker, offset int64) {
			// A transaction's offsets take effect (or go) with its
			// marker in the group's partition.
			if t := n.image.Load().Topic(coordinator.OffsetsTopic); topic == coordinator.OffsetsTopic && t != nil {
				n.groups.MarkerWritten(p, m.ProducerID, m.Commit, offset)
				n.sys.Root.Send(groups, &coordinator.TxnCompleted{Partition: p, Of: int32(len(t.Partitions)), ProducerID: m.ProducerID, Commit: m.Commit, Offset: offset})
			}
		},
	}), "appends")
	if err != nil {
		return err
	}
	return a.spawnController(c, &children{metadata: metadata, partitions: partitions, groups: groups, txns: txns, appends: appends, shares: shares})
}

// spawnController spawns the node's seat in the quorum, after the broker's
// actors (ch, nil on a controller-only node, which runs no other).
func (a *rootActor) spawnController(c actor.Context, ch *children) error {
	n := a.node
	endpoints := n.kafka.endpoints()
	// The controller publishes its image at start, and Start serves once
	// it has: its siblings, and its own PID (a name's PID is known before
	// the spawn), must be known first.
	ctrlPID := actor.NewPID(c.ActorSystem().Address(), c.Self().Id+"/controller")
	if ch == nil {
		ch = &children{}
	}
	ch.controller = ctrlPID
	n.children.Store(ch)
	var clusterAddr string
	if n.remote != nil {
		clusterAddr = n.cfg.ClusterAdvertise
	}
	ctrl, err := c.SpawnNamed(controller.Props(controller.Config{
		Peers: n.peers,
		// A broker-only node follows the voters' log.
		Observer: !n.cfg.HasRole(configs.RoleController),
		NoBroker: !n.isBroker(),
		NodeID:   n.cfg.NodeID, Incarnation: n.incarnation,
		Broker: image.Broker{Host: endpoints[0].Host, Port: endpoints[0].Port, Listeners: endpoints,
			Rack: n.cfg.BrokerRack, ClusterAddr: clusterAddr, Features: image.SupportedFeatures()},
		HeartbeatInterval: time.Duration(n.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		SessionTimeout:    time.Duration(n.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		SnapshotBytes:     int(n.cfg.MetadataSnapshotBytes),
		Refused:           n.refused,
		Dir:               filepath.Join(n.cfg.MetadataDir(), metadataDir), FS: n.files, Clock: n.clock,
		Node: n.cfg, Logger: n.log, Publish: n.publish,
		Quorum: func(s controller.Status) { n.quorum.Store(&s) },
	}), "controller")
	if err != nil {
		return err
	}
	if !ctrl.Equal(ctrlPID) {
		return fmt.Errorf("node: the controller is %s, expected %s", ctrl, ctrlPID)
	}
	return nil
}

// isBroker reports whether the node has the broker role: it registers a
// broker, hosts partitions and coordinators and serves clients. A
// controller-only node (process.roles=controller) runs only its seat in
// the quorum, and its Kafka listener serves only
// transport.ControllerOnlyKeys.
func (n *Node) isBroker() bool { return n.cfg.HasRole(configs.RoleBroker) }

// newIncarnation returns a number no earlier run of this node had: the
// start time, which only a clock set back could repeat, in its high bits,
// and random low bits against that.
func newIncarnation() uint64 {
	var b [2]byte
	rand.Read(b[:])
	return uint64(time.Now().UnixMilli())<<16 | uint64(b[0])<<8 | uint64(b[1])
}

func rootDecider(reason any) actor.Directive {
	return actor.RestartDirective
}
