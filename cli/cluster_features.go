package cli

// skein cluster features: the feature levels (KIP-584) a broker supports
// and the cluster has finalized, from ApiVersions, and their upgrades and
// downgrades through UpdateFeatures, as Kafka's kafka-features.sh.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The upgrade types of UpdateFeatures v1+ (Kafka's
// FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

func newClusterFeaturesCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show each feature's level range on a broker and the level the cluster has finalized",
		Long: `Show the features (metadata.version, transaction.version, group.version,
share.version, streams.version...): the range of levels the answering broker
supports, the level the cluster has finalized (0 when none is: the feature is
off), and the finalized features' epoch, from the broker's ApiVersions.
A level changes through the controller with "features upgrade" and
"features downgrade", as Kafka's kafka-features.sh.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := flags.requestContext(cmd.Context())
			defer cancel()
			resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err != nil {
				return fmt.Errorf("ApiVersions: %w", flags.gaveUp(err))
			}
			v := featuresView{Epoch: resp.FinalizedFeaturesEpoch, Features: []featureView{}}
			finalized := map[string]int16{}
			for _, f := range resp.FinalizedFeatures {
				finalized[f.Name] = f.MaxVersionLevel
			}
			for _, f := range resp.SupportedFeatures {
				v.Features = append(v.Features, featureView{Name: f.Name, SupportedMin: f.MinVersion, SupportedMax: f.MaxVersion, Finalized: finalized[f.Name]})
				delete(finalized, f.Name)
			}
			// A level finalized that this broker does not support (an
			// older binary in a rolling upgrade) is shown too, with an
			// empty range.
			for name, level := range finalized {
				v.Features = append(v.Features, featureView{Name: name, SupportedMin: 0, SupportedMax: 0, Finalized: level, Unsupported: true})
			}
			slices.SortFunc(v.Features, func(a, b featureView) int { return strings.Compare(a.Name, b.Name) })
			return out.write(stdout, v, func() error { return v.text(stdout) })
		},
	}
	out = addOutputFlag(cmd)
	cmd.AddCommand(newFeaturesUpdateCommand(flags, stdout, true), newFeaturesUpdateCommand(flags, stdout, false))
	return cmd
}

// featuresView is what cluster features shows, as -o json and yaml print it.
type featuresView struct {
	// Epoch is the finalized features' epoch, which grows with each change
	// (Skein's: the offset of the metadata image the broker answered from).
	Epoch    int64         `json:"finalized_epoch"`
	Features []featureView `json:"features"`
}

type featureView struct {
	Name         string `json:"name"`
	SupportedMin int16  `json:"supported_min"`
	SupportedMax int16  `json:"supported_max"`
	// Finalized is the cluster's level, 0 when the feature is not
	// finalized (off).
	Finalized int16 `json:"finalized"`
	// Unsupported: finalized, but the answering broker does not list it.
	Unsupported bool `json:"unsupported,omitempty"`
}

func (v featuresView) text(w io.Writer) error {
	rows := [][]string{{"FEATURE", "SUPPORTED", "FINALIZED"}}
	for _, f := range v.Features {
		supported := fmt.Sprintf("%d-%d", f.SupportedMin, f.SupportedMax)
		if f.Unsupported {
			supported = "none"
		}
		rows = append(rows, []string{f.Name, supported, strconv.Itoa(int(f.Finalized))})
	}
	if err := printTable(w, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nEPOCH  %d\n", v.Epoch)
	return err
}

// newFeaturesUpdateCommand is features upgrade, or features downgrade
// when !up.
func newFeaturesUpdateCommand(flags *clientFlags, stdout io.Writer, up bool) *cobra.Command {
	var (
		features       []string
		unsafe, dryRun bool
	)
	verb, past := "upgrade", "upgraded"
	if !up {
		verb, past = "downgrade", "downgraded"
	}
	cmd := &cobra.Command{
		Use:   verb + " --feature name=level...",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " features to the levels given, through the controller",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(features) == 0 {
				return usageError("give at least one --feature name=level")
			}
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.ValidateOnly = dryRun
			typ := upgradeTypeUpgrade
			if !up {
				typ = upgradeTypeSafeDowngrade
				if unsafe {
					typ = upgradeTypeUnsafeDowngrade
				}
			}
			seen := map[string]bool{}
			for _, f := range features {
				name, level, found := strings.Cut(f, "=")
				n, err := strconv.ParseInt(level, 10, 16)
				if !found || name == "" || err != nil {
					return usageError(fmt.Sprintf("--feature %q: want name=level, the level a number", f))
				}
				if seen[name] {
					return usageError(fmt.Sprintf("--feature %s given twice", name))
				}
				seen[name] = true
				u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
				u.Feature, u.MaxVersionLevel, u.UpgradeType = name, int16(n), typ
				// v0's flag, for a broker that answers only v0: a
				// downgrade must allow it.
				u.AllowDowngrade = !up
				req.FeatureUpdates = append(req.FeatureUpdates, u)
			}
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := flags.requestContext(cmd.Context())
			defer cancel()
			// NB: kgo sends UpdateFeatures to the active controller.
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return fmt.Errorf("UpdateFeatures: %w", flags.gaveUp(err))
			}
			// One refusal refuses every update: the top-level error says
			// which; v0-1 also answer for each feature.
			var errs []error
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				errs = append(errs, kafkaError(err, derefString(resp.ErrorMessage)))
			}
			for _, r := range resp.Results {
				if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", r.Feature, kafkaError(err, derefString(r.ErrorMessage))))
				}
			}
			if len(errs) > 0 {
				return exitError{code: 1, err: errors.Join(errs...)}
			}
			for _, u := range req.FeatureUpdates {
				if dryRun {
					fmt.Fprintf(stdout, "%s can be %s to %d (dry run: nothing changed)\n", u.Feature, past, u.MaxVersionLevel)
				} else {
					fmt.Fprintf(stdout, "%s %s to %d\n", u.Feature, past, u.MaxVersionLevel)
				}
			}
			return nil
		},
	}
	if up {
		cmd.Long = `Upgrade each feature given to its level, which every registered broker and
the active controller must support (UpdateFeatures, upgrade type 1). One
refusal refuses them all; each refusal is printed and the exit code is 1.
A broker gone for good holds upgrades back until "cluster unregister-broker"
removes it.`
	} else {
		cmd.Long = `Downgrade each feature given to its level, 0 to turn it off (UpdateFeatures,
upgrade type 2, a safe downgrade; with --unsafe, 3, which Kafka's controller
accepts where a safe one could lose metadata; Skein refuses a
metadata.version downgrade across a change of Kafka's metadata records
either way). One refusal refuses them all; each refusal is printed and the
exit code is 1. Turning share.version, group.version or streams.version off
makes the brokers answer that protocol's APIs UNSUPPORTED_VERSION.`
		cmd.Flags().BoolVar(&unsafe, "unsafe", false, "an unsafe downgrade (upgrade type 3) rather than a safe one")
	}
	cmd.Flags().StringArrayVar(&features, "feature", nil, "a feature and the level to set, name=level (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "ask the controller whether it would accept, changing nothing (ValidateOnly)")
	return cmd
}
