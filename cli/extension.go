package cli

// skein extension create|list|describe|delete|kinds: the cluster's
// extension instances, through a node's admin API (--admin, or
// SKEIN_ADMIN; see node/extensions.go for the endpoints). The node checks
// a new instance against the kinds compiled into it and has the
// controller store it; every node's image then holds it.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// extensionDef is an extension instance of the admin API.
type extensionDef struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Settings map[string]string `json:"settings"`
	// Partitions are the source partitions the node asked processes for
	// the instance.
	Partitions []extensionPartition `json:"partitions"`
}

// extensionPartition is a source partition's actor as a node reports it.
type extensionPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Node      int32  `json:"node"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Position  int64  `json:"position"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Processed int64  `json:"processed"`
	Emitted   int64  `json:"emitted"`
	Skipped   int64  `json:"skipped"`
	Restarts  int64  `json:"restarts"`
}

// extensionKind is a kind of GET /v1/extension-kinds.
type extensionKind struct {
	Name     string `json:"name"`
	Doc      string `json:"doc"`
	Settings []struct {
		Name     string `json:"name"`
		Default  string `json:"default"`
		Required bool   `json:"required"`
		Doc      string `json:"doc"`
		Common   bool   `json:"common"`
	} `json:"settings"`
}

// extensionFlags are the flags every extension command shares.
type extensionFlags struct {
	admin   adminFlag
	timeout time.Duration
	// HTTPS and credentials for the admin APIs (security.go).
	security securityFlags
}

func newExtensionCommand(environ []string, stdout io.Writer) *cobra.Command {
	f := &extensionFlags{}
	cmd := &cobra.Command{
		Use:   "extension",
		Short: "Create, list, describe and delete the cluster's extension instances",
		Long: "An extension instance runs a kind of extension compiled into Skein (`skein\n" +
			"extension kinds` lists them, with their settings) over the topics its\n" +
			"source.topics names. Instances are cluster metadata: any node's admin API\n" +
			"(--admin host:port, or SKEIN_ADMIN; the first of a list that answers) creates\n" +
			"and deletes them for the whole cluster.",
		Args: cobra.NoArgs,
	}
	fs := cmd.PersistentFlags()
	f.admin.register(cmd, environ, "a node's admin listener, host:port; of a comma-separated list, the first that answers")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each admin request (a change waits for the cluster to commit it)")
	f.security.register(fs, environ)
	f.security.bind(cmd)
	cmd.AddCommand(newExtensionCreateCommand(f, stdout), newExtensionListCommand(f, stdout),
		newExtensionDescribeCommand(f, stdout), newExtensionDeleteCommand(f, stdout), newExtensionKindsCommand(f, stdout))
	return cmd
}

// do sends a request to the first node of --admin that answers, with body
// (nil for none) as JSON, and decodes the answer into out when its status
// is want; any other answer is an error with the node's message.
func (f *extensionFlags) do(ctx context.Context, method, path string, body any, want int, out any) error {
	addrs, err := f.admin.addrs(&f.security)
	if err != nil {
		return err
	}
	if f.timeout <= 0 {
		return usageError("--timeout must be positive")
	}
	access, err := f.security.access()
	if err != nil {
		return usageError(err.Error())
	}
	hc := access.Client(0)
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var errs []error
	for _, addr := range addrs {
		req, err := http.NewRequestWithContext(ctx, method, access.URL(addr, path), bytes.NewReader(data))
		if err != nil {
			return usageError(fmt.Sprintf("--admin %s: %v", addr, err))
		}
		access.Authorize(req)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("--admin %s: %w", addr, err))
			continue // the next node may answer
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("--admin %s: %s %s: reading the answer: %w", addr, method, path, err)
		}
		if resp.StatusCode != want {
			var e struct{ Error string }
			if json.Unmarshal(answer, &e) == nil && e.Error != "" {
				return errors.New(e.Error)
			}
			return fmt.Errorf("--admin %s: %s %s: %s %s", addr, method, path, resp.Status, bytes.TrimSpace(answer))
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("--admin %s: %s %s: %w", addr, method, path, err)
		}
		return nil
	}
	return errors.Join(errs...)
}

func newExtensionCreateCommand(f *extensionFlags, stdout io.Writer) *cobra.Command {
	var (
		kind string
		sets []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME --kind KIND [--set key=value]...",
		Short: "Create an extension instance",
		Long: "Create the extension instance NAME (a name as a topic's) of kind --kind, with\n" +
			"the kind's settings given by --set (repeatable); source.topics, the topics it\n" +
			"reads, is needed by every kind. The node refuses a kind it does not have and\n" +
			"settings the kind does not take or needs; settings left out take the kind's\n" +
			"defaults.",
		Example: "  skein extension create audit --kind route --set source.topics=orders --set routes='key~^vip=>vip-orders'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind == "" {
				return usageError("give the kind with --kind (skein extension kinds lists them)")
			}
			settings := map[string]string{}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageError(fmt.Sprintf("--set %q: want key=value", kv))
				}
				settings[k] = v
			}
			var out extensionDef
			if err := f.do(cmd.Context(), http.MethodPost, "/v1/extensions", extensionDef{Name: args[0], Kind: kind, Settings: settings}, http.StatusCreated, &out); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created extension %s (kind %s)\n", out.Name, out.Kind)
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "the kind of extension (skein extension kinds)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "a setting, key=value (repeatable)")
	return cmd
}

// extensionListed is an instance of extension list, as -o json and yaml
// print it.
type extensionListed struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Settings map[string]string `json:"settings"`
}

func newExtensionListCommand(f *extensionFlags, stdout io.Writer) *cobra.Command {
	var o *output
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the extension instances with their kinds and settings",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Extensions []extensionDef `json:"extensions"`
			}
			if err := f.do(cmd.Context(), http.MethodGet, "/v1/extensions", nil, http.StatusOK, &out); err != nil {
				return err
			}
			listed := []extensionListed{}
			for _, e := range out.Extensions {
				listed = append(listed, extensionListed{e.Name, e.Kind, orEmptyMap(e.Settings)})
			}
			return o.write(stdout, listed, func() error {
				rows := [][]string{{"NAME", "KIND", "SETTINGS"}}
				for _, e := range listed {
					var kvs []string
					for _, k := range slices.Sorted(maps.Keys(e.Settings)) {
						kvs = append(kvs, k+"="+e.Settings[k])
					}
					rows = append(rows, []string{e.Name, e.Kind, strings.Join(kvs, ",")})
				}
				return printTable(stdout, rows)
			})
		},
	}
	o = addOutputFlag(cmd)
	return cmd
}

// orEmptyMap makes a nil map an empty one, which json prints as {}.
func orEmptyMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// extensionView is what extension describe shows of an instance, as -o
// json and yaml print it.
type extensionView struct {
	Name       string               `json:"name"`
	Kind       string               `json:"kind"`
	Settings   []extensionSetting   `json:"settings"`
	Partitions []extensionPartition `json:"partitions"`
}

// extensionSetting is a setting's value and its source: set, or the
// kind's default.
type extensionSetting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

func newExtensionDescribeCommand(f *extensionFlags, stdout io.Writer) *cobra.Command {
	var o *output
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show an extension instance: its kind, and each setting with its value and source",
		Long: "Show an extension instance: its kind and every setting of the kind with its\n" +
			"value and source (set, or the kind's default); when the node lacks the\n" +
			"kind, the settings as set. Then each source partition it processes, on\n" +
			"each node of --admin: state, position, end, lag, records in and out,\n" +
			"restarts, and why it waits or is parked.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var e extensionDef
			if err := f.do(cmd.Context(), http.MethodGet, "/v1/extensions/"+args[0], nil, http.StatusOK, &e); err != nil {
				return err
			}
			var kinds struct {
				Kinds []extensionKind `json:"kinds"`
			}
			if err := f.do(cmd.Context(), http.MethodGet, "/v1/extension-kinds", nil, http.StatusOK, &kinds); err != nil {
				return err
			}
			v := extensionView{Name: e.Name, Kind: e.Kind, Settings: []extensionSetting{}}
			shown := map[string]bool{}
			for _, k := range kinds.Kinds {
				if k.Name != e.Kind {
					continue
				}
				for _, s := range k.Settings {
					shown[s.Name] = true
					if val, ok := e.Settings[s.Name]; ok {
						v.Settings = append(v.Settings, extensionSetting{s.Name, val, "set"})
					} else if !s.Required {
						v.Settings = append(v.Settings, extensionSetting{s.Name, s.Default, "default"})
					}
				}
			}
			for _, name := range slices.Sorted(maps.Keys(e.Settings)) {
				if !shown[name] {
					v.Settings = append(v.Settings, extensionSetting{name, e.Settings[name], "set"})
				}
			}
			// Each node processes the source partitions it leads: ask
			// every node given.
			v.Partitions = orEmpty(f.partitions(cmd.Context(), args[0]))
			return o.write(stdout, v, func() error {
				fmt.Fprintf(stdout, "NAME  %s\nKIND  %s\n\n", v.Name, v.Kind)
				rows := [][]string{{"SETTING", "VALUE", "SOURCE"}}
				for _, s := range v.Settings {
					rows = append(rows, []string{s.Name, s.Value, s.Source})
				}
				if err := printTable(stdout, rows); err != nil {
					return err
				}
				if len(v.Partitions) == 0 {
					return nil
				}
				fmt.Fprintln(stdout)
				rows = [][]string{{"TOPIC", "PARTITION", "NODE", "STATE", "POSITION", "END", "LAG", "PROCESSED", "EMITTED", "RESTARTS", "REASON"}}
				for _, p := range v.Partitions {
					rows = append(rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Node)), p.State,
						strconv.FormatInt(p.Position, 10), strconv.FormatInt(p.End, 10), strconv.FormatInt(p.Lag, 10),
						strconv.FormatInt(p.Processed, 10), strconv.FormatInt(p.Emitted, 10), strconv.FormatInt(p.Restarts, 10), p.Reason})
				}
				return printTable(stdout, rows)
			})
		},
	}
	o = addOutputFlag(cmd)
	return cmd
}

// partitions returns the source partitions of an instance that the nodes
// of --admin process, by topic and partition; a node that does not answer
// adds none.
func (f *extensionFlags) partitions(ctx context.Context, name string) []extensionPartition {
	var out []extensionPartition
	addrs, err := f.admin.addrs(&f.security)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		// NB: with --admin's security: a secured admin API asks each
		// node for the same credentials.
		one := &extensionFlags{admin: adminFlag{value: a, given: func() bool { return true }}, timeout: f.timeout, security: f.security}
		if f.security.adminHTTPS {
			one.admin.value = "https://" + a
		}
		var e extensionDef
		if one.do(ctx, http.MethodGet, "/v1/extensions/"+url.PathEscape(name), nil, http.StatusOK, &e) == nil {
			out = append(out, e.Partitions...)
		}
	}
	slices.SortFunc(out, func(a, b extensionPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

func newExtensionDeleteCommand(f *extensionFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an extension instance",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.do(cmd.Context(), http.MethodDelete, "/v1/extensions/"+args[0], nil, http.StatusOK, nil); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted extension %s\n", args[0])
			return nil
		},
	}
}

func newExtensionKindsCommand(f *extensionFlags, stdout io.Writer) *cobra.Command {
	var o *output
	cmd := &cobra.Command{
		Use:   "kinds",
		Short: "List the kinds of extension the node has, with their settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Kinds []extensionKind `json:"kinds"`
			}
			if err := f.do(cmd.Context(), http.MethodGet, "/v1/extension-kinds", nil, http.StatusOK, &out); err != nil {
				return err
			}
			return o.write(stdout, orEmpty(out.Kinds), func() error {
				if len(out.Kinds) == 0 {
					fmt.Fprintln(stdout, "no kinds of extension")
				}
				for i, k := range out.Kinds {
					if i > 0 {
						fmt.Fprintln(stdout)
					}
					fmt.Fprintf(stdout, "KIND %s: %s\n", k.Name, k.Doc)
					rows := [][]string{{"SETTING", "DEFAULT", "REQUIRED", "DOC"}}
					for _, s := range k.Settings {
						req := ""
						if s.Required {
							req = "yes"
						}
						rows = append(rows, []string{s.Name, s.Default, req, s.Doc})
					}
					if err := printTable(stdout, rows); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	o = addOutputFlag(cmd)
	return cmd
}
