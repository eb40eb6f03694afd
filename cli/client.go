package cli

// The command-line client's plumbing: the flags every client command shares,
// connecting to a broker with a bounded wait, and Kafka errors as messages.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of the client flags.
const (
	defaultBrokers = "127.0.0.1:9092"
	defaultTimeout = 10 * time.Second
	envBrokers     = "SKEIN_BROKERS"
)

// clientFlags are the flags of every client command: where the brokers are
// and how long to wait for them.
// clientCommand makes a family of client commands (skein topic, group,
// cluster) whose subcommands share the client flags.
func clientCommand(use, short string, environ []string, stdout io.Writer, subs ...func(*clientFlags, io.Writer) *cobra.Command) *cobra.Command {
	flags := &clientFlags{}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	flags.register(cmd, environ)
	for _, sub := range subs {
		cmd.AddCommand(sub(flags, stdout))
	}
	return cmd
}

type clientFlags struct {
	brokers string
	// brokersGiven: --brokers or SKEIN_BROKERS named the brokers, which
	// then win over --command-config's bootstrap.servers.
	brokersGiven func() bool
	timeout      time.Duration
	// TLS and SASL, as a secured listener asks (security.go).
	security securityFlags
}

// register adds the client flags to cmd and its subcommands. The default
// of --brokers is SKEIN_BROKERS when environ sets it.
func (f *clientFlags) register(cmd *cobra.Command, environ []string) {
	brokers, fromEnv := defaultBrokers, false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, envBrokers+"="); ok && v != "" {
			brokers, fromEnv = v, true // the last one wins, as with os/exec
		}
	}
	fs := cmd.PersistentFlags()
	fs.StringVar(&f.brokers, "brokers", brokers, "comma-separated seed brokers, host:port (env "+envBrokers+"; else the profile's)")
	f.brokersGiven = func() bool { return fromEnv || fs.Changed("brokers") }
	fs.DurationVar(&f.timeout, "timeout", defaultTimeout, "bound on connecting to a broker and on each request")
	f.security.register(fs, environ)
	f.security.bind(cmd)
}

// seeds returns the --brokers list.
// Unless --brokers or SKEIN_BROKERS named them, they are
// --command-config's bootstrap.servers, or else the profile's.
func (f *clientFlags) seeds() ([]string, error) {
	if err := f.security.resolve(); err != nil {
		return nil, usageError(err.Error())
	}
	if !f.brokersGiven() {
		if f.security.bootstrap != "" {
			f.brokers = f.security.bootstrap
		} else if p := f.security.profile; p != nil && p.Brokers != "" {
			f.brokers = string(p.Brokers)
		}
	}
	var seeds []string
	for s := range strings.SplitSeq(f.brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, usageError("--brokers is empty")
	}
	if f.timeout <= 0 {
		return nil, usageError("--timeout must be positive")
	}
	if err := f.security.build(); err != nil {
		return nil, usageError(err.Error())
	}
	return seeds, nil
}

// connect returns a franz-go client for the brokers once one of them has
// answered a request, so that a wrong address fails at once with the dial
// error instead of in kgo's retries. The caller closes the client.
//
// NB: kgo retries a failed dial until its retry timeout (30 s by default);
// Ping tries each seed exactly once, and every dial and request is bounded by
// --timeout, so the worst case is one timeout per seed.
func (f *clientFlags) connect(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := f.seeds()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(f.baseOpts(seeds), opts...)...)
	if err != nil {
		return nil, usageError(err.Error())
	}
	pingCtx, cancel := context.WithTimeout(ctx, f.timeout*time.Duration(len(seeds)))
	defer cancel()
	if err := cl.Ping(pingCtx); err != nil {
		cl.Close()
		// NB: a broker that accepts and never answers ends either with
		// the context or with kgo's read deadline (--timeout too), and
		// then its next dial with the context: "dial tcp: i/o timeout".
		if ne, ok := errors.AsType[net.Error](err); pingCtx.Err() != nil || ok && ne.Timeout() {
			return nil, fmt.Errorf("no broker answered at %s within --timeout %v: %w", strings.Join(seeds, ","), f.timeout, err)
		}
		return nil, fmt.Errorf("no broker answered at %s: %w", strings.Join(seeds, ","), err)
	}
	return cl, nil
}

// baseOpts are the kgo options of every client the commands make; seeds
// has checked the flags.
func (f *clientFlags) baseOpts(seeds []string) []kgo.Opt {
	return append(f.security.opts, []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(f.timeout),
		kgo.RetryTimeout(f.timeout),
		// A request without a timeout of its own (all but Produce, Fetch
		// and the admin requests that carry one) is given up on when no
		// answer comes within --timeout; one with a timeout, within it
		// plus --timeout.
		kgo.RequestTimeoutOverhead(f.timeout),
		kgo.ClientID("skein-cli"),
		// NB: a partition of a topic created a moment ago may not be
		// hosted yet, and its NOT_LEADER_FOR_PARTITION makes kgo refresh
		// metadata; its default minimum age of 5 s between refreshes would
		// stall the command that long. librdkafka refreshes after 100 ms
		// (topic.metadata.refresh.fast.interval.ms).
		kgo.MetadataMinAge(100 * time.Millisecond),
	}...)
}

// admin connects and returns a kadm client over it; closing it closes the
// connection.
// withAdmin runs fn with an admin client for the command and a context that
// bounds its requests by --timeout; both are released when fn returns.
func (f *clientFlags) withAdmin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	adm, err := f.admin(cmd.Context())
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := f.requestContext(cmd.Context())
	defer cancel()
	return f.gaveUp(fn(ctx, adm))
}

// gaveUp says, of an error from a request that was not answered within
// --timeout, that the command gave up waiting: kgo reports only the
// context's "context deadline exceeded" or the connection's "i/o timeout".
func (f *clientFlags) gaveUp(err error) error {
	if ne, ok := errors.AsType[net.Error](err); errors.Is(err, context.DeadlineExceeded) || ok && ne.Timeout() {
		return fmt.Errorf("gave up after %v (--timeout) waiting for the cluster's answer: %w", f.timeout, err)
	}
	return err
}

func (f *clientFlags) admin(ctx context.Context) (*kadm.Client, error) {
	cl, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// requestContext bounds one admin command's requests by --timeout.
func (f *clientFlags) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.timeout)
}

// kafkaError formats err, a Kafka error code from a response, with the
// broker's error message when it sent one that adds to the code's
// description: "TOPIC_ALREADY_EXISTS: The topic has already been created.
// (Topic 't' already exists.)".
func kafkaError(err error, message string) error {
	if err == nil {
		return nil
	}
	if message == "" || strings.Contains(err.Error(), message) {
		return err
	}
	return fmt.Errorf("%w (%s)", err, message)
}

// usageError is a mistake in the command line: exit code 2, as flag errors.
func usageError(msg string) error {
	return exitError{code: 2, err: errors.New(msg)}
}

// printTable writes rows as columns aligned with spaces, the first row a
// header, as rpk and kcat -L print lists.
func printTable(w io.Writer, rows [][]string) error {
	widths := []int{}
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	var b, line strings.Builder
	for _, r := range rows {
		line.Reset()
		for i, c := range r {
			line.WriteString(c)
			line.WriteString(strings.Repeat(" ", widths[i]-len(c)+2))
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// eachAnswered reports a broker's per-name answers in the order the names
// were given: a "<what> NAME: ..." error for each name that failed or is
// missing from the answer, and done(name, answer) for each success. fail
// returns an answer's error, nil on success.
func eachAnswered[R any](what string, names []string, answers map[string]R, fail func(R) error, done func(string, R)) error {
	var errs []error
	for _, name := range names {
		r, ok := answers[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s %s: not in the broker's response", what, name))
		case fail(r) != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", what, name, fail(r)))
		default:
			done(name, r)
		}
	}
	return errors.Join(errs...)
}
