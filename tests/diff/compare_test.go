//go:build kafkadiff

package diff

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokers are the two brokers TestMain started.
var kafkaAddr, skeinAddr string

// versions are the API versions each broker advertises, key to [min, max],
// read by TestMain.
var kafkaVersions, skeinVersions map[int16][2]int16

// A dcase is one case's view of the two brokers: what it sends, and the
// names it gives to ids the brokers chose (member ids), so that both
// answers read alike.
type dcase struct {
	t          *testing.T
	kafkaNames map[string]string
	skeinNames map[string]string
	// kafkaAddr and skeinAddr, when set, are another pair of brokers
	// (acl_test.go's), and user, when set, the SASL/PLAIN user each
	// request's connection logs in as first.
	kafkaAddr, skeinAddr string
	user                 string
}

func newCase(t *testing.T) *dcase {
	return &dcase{t: t, kafkaNames: map[string]string{}, skeinNames: map[string]string{}}
}

// name calls the id Kafka chose and the id Skein chose for the same thing
// by one name in both answers.
func (c *dcase) name(kafkaID, skeinID, name string) {
	if kafkaID != "" {
		c.kafkaNames[kafkaID] = name
	}
	if skeinID != "" {
		c.skeinNames[skeinID] = name
	}
}

// commonMax is the highest version of key that kmsg and both brokers speak.
func commonMax(t *testing.T, req kmsg.Request) int16 {
	t.Helper()
	k, kok := kafkaVersions[req.Key()]
	s, sok := skeinVersions[req.Key()]
	if !kok || !sok {
		t.Fatalf("API key %d: kafka advertises it: %v, skein: %v", req.Key(), kok, sok)
	}
	v := min(req.MaxVersion(), k[1], s[1])
	if v < max(k[0], s[0]) {
		t.Fatalf("API key %d: no version both speak (kafka %d-%d, skein %d-%d)", req.Key(), k[0], k[1], s[0], s[1])
	}
	return v
}

// exchange sends req to both brokers at once, at version v, or at the
// highest version both speak when v is -1, and returns their answers.
func (c *dcase) exchange(req kmsg.Request, v int16) (kafka, skein outcome) {
	c.t.Helper()
	return c.exchangeEach(v, func(bool) kmsg.Request { return req })
}

// exchangeEach is exchange for a request that names something each broker
// chose (a topic id): build makes Kafka's request (kafka true) and Skein's.
func (c *dcase) exchangeEach(v int16, build func(kafka bool) kmsg.Request) (kafka, skein outcome) {
	c.t.Helper()
	kreq, sreq := build(true), build(false)
	if v < 0 {
		v = commonMax(c.t, kreq)
	}
	kreq.SetVersion(v)
	sreq.SetVersion(v)
	ka, sa := kafkaAddr, skeinAddr
	if c.kafkaAddr != "" {
		ka, sa = c.kafkaAddr, c.skeinAddr
	}
	var wg sync.WaitGroup
	wg.Go(func() { kafka = sendAs(ka, c.user, kreq) })
	wg.Go(func() { skein = sendAs(sa, c.user, sreq) })
	wg.Wait()
	return kafka, skein
}

// compare sends req to both brokers at the highest version both speak,
// checks that the answers are the same but for the differences listed, and
// returns them for the case's next request. A broker that did not answer
// fails the case unless the other did not either.
func (c *dcase) compare(req kmsg.Request) (kafka, skein kmsg.Response) {
	c.t.Helper()
	return c.compareAt(req, -1)
}

// compareAt is compare at version v.
func (c *dcase) compareAt(req kmsg.Request, v int16) (kafka, skein kmsg.Response) {
	c.t.Helper()
	return c.compareEach(v, func(bool) kmsg.Request { return req })
}

// compareEach is compare for a request built for each broker, at version v
// (-1: the highest both speak).
func (c *dcase) compareEach(v int16, build func(kafka bool) kmsg.Request) (kafka, skein kmsg.Response) {
	c.t.Helper()
	ko, so := c.exchangeEach(v, build)
	req := build(true)
	c.check(fmt.Sprintf("%T v%d", req, ko.version(so)), ko, so)
	return ko.resp, so.resp
}

// check compares two outcomes of request what.
func (c *dcase) check(what string, kafka, skein outcome) {
	c.t.Helper()
	var diffs []difference
	switch {
	case kafka.err != nil || skein.err != nil:
		ke, se := "answered", "answered"
		if kafka.err != nil {
			ke = kafka.err.Error()
		}
		if skein.err != nil {
			se = skein.err.Error()
		}
		if ke != se {
			diffs = append(diffs, difference{"<outcome>", ke, se})
		}
	default:
		diffs = diff("", treeOf(kafka.resp, c.kafkaNames), treeOf(skein.resp, c.skeinNames))
	}
	var failed []string
	for _, d := range diffs {
		if why := intended(c.t.Name(), d); why != "" {
			c.t.Logf("%s: intended difference: %s (%s)", what, d, why)
			continue
		}
		failed = append(failed, d.String())
	}
	if len(failed) > 0 {
		c.t.Errorf("%s: %d differences from Kafka:\n  %s", what, len(failed), strings.Join(failed, "\n  "))
	}
}

// intended returns the reason differences.go gives for d in case, or "".
func intended(testName string, d difference) string {
	for i := range differences {
		e := &differences[i]
		if glob(e.Case, testName) && glob(e.Path, d.path) &&
			(e.Kafka == "" || glob(e.Kafka, d.kafka)) && (e.Skein == "" || glob(e.Skein, d.skein)) {
			usedMu.Lock()
			used[i] = true
			usedMu.Unlock()
			return e.Reason
		}
	}
	return ""
}

var (
	usedMu sync.Mutex
	used   = map[int]bool{}
)

// glob matches s against pattern, where ** stands for any run of
// characters and * for any run without a bracket, so that Configs[*]
// names one config and not a field inside it (dots are literal, unlike
// path.Match).
func glob(pattern, s string) bool {
	globMu.Lock()
	re, ok := globs[pattern]
	if !ok {
		var sb strings.Builder
		sb.WriteString("^")
		for i, part := range strings.Split(pattern, "**") {
			if i > 0 {
				sb.WriteString(".*")
			}
			for j, q := range strings.Split(part, "*") {
				if j > 0 {
					sb.WriteString(`[^\[\]]*`)
				}
				sb.WriteString(regexp.QuoteMeta(q))
			}
		}
		sb.WriteString("$")
		re = regexp.MustCompile(sb.String())
		globs[pattern] = re
	}
	globMu.Unlock()
	return re.MatchString(s)
}

var (
	globMu sync.Mutex
	globs  = map[string]*regexp.Regexp{}
)

// bothModes runs fn as two subtests: "validate" with the request's
// ValidateOnly set, then name (what the request does) without it.
func bothModes(t *testing.T, name string, fn func(t *testing.T, validateOnly bool)) {
	for _, validateOnly := range []bool{true, false} {
		mode := name
		if validateOnly {
			mode = "validate"
		}
		t.Run(mode, func(t *testing.T) { fn(t, validateOnly) })
	}
}
