package cli

// skein topic reassign --generate and --plan: a reassignment plan moving
// topics' partitions onto a set of brokers, in kafka-reassign-partitions'
// JSON, and the execution of such a plan.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// reassignmentPlan is kafka-reassign-partitions' JSON:
// {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}.
type reassignmentPlan struct {
	Version    int                 `json:"version"`
	Partitions []plannedAssignment `json:"partitions"`
}

type plannedAssignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// generatedPlan is --generate's answer: the current assignment, to go back
// to, and the proposed one.
type generatedPlan struct {
	Current  reassignmentPlan `json:"current"`
	Proposed reassignmentPlan `json:"proposed"`
}

// withReassignPlans gives topic reassign its --generate and --plan modes;
// without them it is the command as made.
func withReassignPlans(flags *clientFlags, stdout io.Writer, cmd *cobra.Command) *cobra.Command {
	var (
		generate bool
		onto     []int32
		planFile string
		throttle int64
		verify   bool
	)
	args, run := cmd.Args, cmd.RunE
	cmd.Use = "reassign (NAME -p N,... (--replicas B,... | --cancel) | --generate --broker-ids B,... NAME... | --plan FILE [--throttle B/S] | --verify --plan FILE)"
	cmd.Long += "\n\n" +
		"--generate prints a plan moving every partition of the topics NAME... onto the\n" +
		"brokers --broker-ids, as kafka-reassign-partitions --generate: each partition\n" +
		"keeps its replica count, and replicas and preferred leaders are spread evenly\n" +
		"over the brokers (Kafka's round-robin placement, from the first broker, so the\n" +
		"same input gives the same plan). It prints the current assignment, to go back\n" +
		"to, and the proposed one, each a line of kafka-reassign-partitions' JSON\n" +
		"({\"version\":1,\"partitions\":[{\"topic\",\"partition\",\"replicas\"}]}); -o json\n" +
		"prints both as {\"current\",\"proposed\"}. Nothing is changed.\n\n" +
		"--plan FILE executes such a plan (the proposed one saved to a file, or\n" +
		"Kafka's own), as kafka-reassign-partitions --execute; `skein topic\n" +
		"reassignments` follows it. With --throttle B/S it first throttles the\n" +
		"replication it causes (KIP-73), as kafka-reassign-partitions --throttle: each\n" +
		"moving partition's current replicas go into its topic's\n" +
		"leader.replication.throttled.replicas and its added ones into\n" +
		"follower.replication.throttled.replicas (partition:broker pairs, replacing the\n" +
		"lists there), and every broker of either gets leader.replication.throttled.rate\n" +
		"and follower.replication.throttled.rate of B/S. Replicas in sync are never\n" +
		"throttled.\n\n" +
		"--verify --plan FILE reports each partition of the plan as complete, in\n" +
		"progress or not as planned, and once none is in progress removes the throttle:\n" +
		"the two rates on every broker and the two lists on the plan's topics, as\n" +
		"kafka-reassign-partitions --verify does. Run it until it says so."
	cmd.Example += "\n  skein topic reassign --generate --broker-ids 1,2,3 orders audit\n" +
		"  skein topic reassign --plan plan.json --throttle 50000000\n" +
		"  skein topic reassign --verify --plan plan.json"
	out := addOutputFlag(cmd)
	cmd.Flags().BoolVar(&generate, "generate", false, "print a plan moving the topics' partitions onto --broker-ids")
	cmd.Flags().Int32SliceVar(&onto, "broker-ids", nil, "with --generate, the brokers to move the partitions onto")
	cmd.Flags().StringVar(&planFile, "plan", "", "execute a plan in kafka-reassign-partitions' JSON")
	cmd.Flags().Int64Var(&throttle, "throttle", -1, "with --plan, throttle the replication the plan causes to this many bytes/s per broker (KIP-73)")
	cmd.Flags().BoolVar(&verify, "verify", false, "with --plan, report the plan's progress, and remove the throttle once it is complete")
	cmd.Args = func(c *cobra.Command, a []string) error {
		switch {
		case generate:
			return cobra.MinimumNArgs(1)(c, a)
		case planFile != "" || verify || c.Flags().Changed("throttle"):
			return cobra.NoArgs(c, a)
		}
		return args(c, a)
	}
	cmd.RunE = func(c *cobra.Command, names []string) error {
		if generate || planFile != "" {
			for _, f := range []string{"partition", "replicas", "cancel"} {
				if c.Flags().Changed(f) {
					return usageError(fmt.Sprintf("--%s goes with NAME, not with --generate or --plan", f))
				}
			}
		}
		switch {
		case generate && planFile != "":
			return usageError("give --generate or --plan, not both")
		case (verify || c.Flags().Changed("throttle")) && planFile == "":
			return usageError("--throttle and --verify go with --plan FILE")
		case verify && c.Flags().Changed("throttle"):
			return usageError("give --throttle (with the plan's execution) or --verify, not both")
		case c.Flags().Changed("throttle") && throttle < 0:
			return usageError("--throttle: a rate in bytes/s, at least 0")
		case generate:
			if len(onto) == 0 {
				return usageError("--generate needs --broker-ids: the brokers to move the partitions onto")
			}
			return flags.withAdmin(c, func(ctx context.Context, adm *kadm.Client) error {
				plan, err := generateReassignment(ctx, adm, names, onto)
				if err != nil {
					return err
				}
				return out.write(stdout, plan, func() error {
					cur, _ := json.Marshal(plan.Current)
					prop, _ := json.Marshal(plan.Proposed)
					_, err := fmt.Fprintf(stdout, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", cur, prop)
					return err
				})
			})
		case planFile != "":
			data, err := os.ReadFile(planFile)
			if err != nil {
				return usageError(fmt.Sprintf("--plan: %v", err))
			}
			var plan reassignmentPlan
			if err := json.Unmarshal(data, &plan); err != nil || plan.Version != 1 {
				return usageError(fmt.Sprintf("--plan %s: not a plan of kafka-reassign-partitions' JSON, version 1 (%v)", planFile, err))
			}
			return flags.withAdmin(c, func(ctx context.Context, adm *kadm.Client) error {
				switch {
				case verify:
					v, err := verifyReassignment(ctx, adm, plan)
					if err != nil {
						return err
					}
					return out.write(stdout, v, func() error { return printVerification(stdout, v) })
				case throttle >= 0:
					current, err := currentAssignment(ctx, adm, plan)
					if err != nil {
						return err
					}
					if err := applyThrottle(ctx, adm, planThrottle(plan, current, throttle), stdout); err != nil {
						return err
					}
					fmt.Fprintln(stdout, "Run `skein topic reassign --verify --plan FILE` until the reassignment completes, to remove the throttle.")
				}
				return executeReassignment(ctx, adm, plan, stdout)
			})
		}
		return run(c, names)
	}
	return cmd
}

// generateReassignment plans the topics' partitions onto brokers as Kafka's
// rack-unaware placement does (AdminUtils.assignReplicasToBrokersRackUnaware)
// with the start index and the replica shift at 0 and the partitions of all
// the topics numbered in turn, so that it is deterministic.
func generateReassignment(ctx context.Context, adm *kadm.Client, topics []string, onto []int32) (generatedPlan, error) {
	brokers := slices.Clone(onto)
	slices.Sort(brokers)
	brokers = slices.Compact(brokers)
	listed, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return generatedPlan{}, err
	}
	plan := generatedPlan{Current: reassignmentPlan{Version: 1, Partitions: []plannedAssignment{}}, Proposed: reassignmentPlan{Version: 1, Partitions: []plannedAssignment{}}}
	n := len(brokers)
	i := 0
	for _, name := range topics {
		t, ok := listed[name]
		switch {
		case !ok:
			return generatedPlan{}, fmt.Errorf("topic %s: not in the broker's metadata", name)
		case t.Err != nil:
			return generatedPlan{}, fmt.Errorf("topic %s: %w", name, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			rf := len(p.Replicas)
			if rf > n {
				return generatedPlan{}, fmt.Errorf("topic %s partition %d has %d replicas, more than the %d brokers of --broker-ids", name, p.Partition, rf, n)
			}
			plan.Current.Partitions = append(plan.Current.Partitions, plannedAssignment{Topic: name, Partition: p.Partition, Replicas: p.Replicas})
			first := i % n
			shift := (i / n) % max(n-1, 1)
			replicas := []int32{brokers[first]}
			for j := 0; j < rf-1; j++ {
				// Kafka's replicaIndex: 1 + (shift + j) % (n - 1) after the first.
				replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
			}
			plan.Proposed.Partitions = append(plan.Proposed.Partitions, plannedAssignment{Topic: name, Partition: p.Partition, Replicas: replicas})
			i++
		}
	}
	return plan, nil
}

// executeReassignment sends a plan's assignments (AlterPartitionReassignments)
// and prints each partition's answer.
func executeReassignment(ctx context.Context, adm *kadm.Client, plan reassignmentPlan, w io.Writer) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, a := range plan.Partitions {
		req.Assign(a.Topic, a.Partition, a.Replicas)
	}
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range plan.Partitions {
		r, ok := res[a.Topic][a.Partition]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s-%d: not in the broker's answer", a.Topic, a.Partition))
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("%s-%d: %w", a.Topic, a.Partition, kafkaError(r.Err, r.ErrMessage)))
		default:
			fmt.Fprintf(w, "%s-%d: reassigning to %s\n", a.Topic, a.Partition, int32List(a.Replicas))
		}
	}
	return errors.Join(errs...)
}
