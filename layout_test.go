package skein

import (
	"encoding/json"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skeinlog/skein"

// layers is the layering docs/architecture.md draws ("Packages and
// layers"), lowest first: a package may import only packages of strictly
// lower layers (and an xxxtest package its parent).
var layers = map[string]int{
	"internal/clock":   0,
	"internal/vfs":     0,
	"internal/logging": 0,
	// needroot is for tests only: a test that needs root says so.
	"internal/needroot": 0,
	// testcerts is for tests only: a CA and the certificates it issues.
	"internal/testcerts": 0,
	// history is the log checker (lost, duplicate, reordered, aborted
	// reads) that fault tests and `skein chaos run` share: client-side, it
	// imports nothing of Skein's.
	"history": 0,
	"configs": 1,
	// security is TLS and principals (plain Go): transport and node use
	// it.
	"security":         1,
	"partition/store":  2,
	"controller/image": 2,
	"actors":           2,
	// replica holds the leader's and follower's logic as pure state
	// machines, which the partition actor drives: it sits below partition.
	"replica":     2,
	"partition":   3,
	"coordinator": 4,
	// txn is the transaction coordinator, a package of its own beside the
	// group coordinator, meeting it through messages (partition.Marker,
	// coordinator.TxnCompleted).
	"txn":        4,
	"share":      4,
	"controller": 4,
	// extension runs user actors beside the partitions: it reads their
	// views and writes through their appends actors; its library of
	// kinds sits above it.
	"extension":         4,
	"extension/library": 5,
	"transport":         5,
	// console is the web console's pages and JSON: the node serves it
	// on its admin listener and hands it a Kafka client.
	"console":       5,
	"node":          6,
	"node/nodetest": 6,
	// cli is the command line, a package of its own so that a binary
	// with more extension kinds can import it; cmd/skein is the binary,
	// whose main only calls cli.Main.
	"cli":       7,
	"cmd/skein": 8,
	// chaos is the client side of fault injection, which `skein chaos`
	// is made of: it talks to nodes over the wire, so it sits with
	// cli's dependencies, below it; node serves its wire types.
	"chaos": 1,
}

// cmdAllowed lists what the command line may import: cli talks to nodes
// over the wire and starts one through node and configs, nothing in
// between; history checks, client-side, what a chaos run's clients saw;
// security reads a client.properties' JAAS line as the node reads its own.
// cmd/skein imports cli and nothing else of Skein's.
var cmdAllowed = map[string]map[string]bool{
	"cli": {"node": true, "configs": true, "chaos": true, "internal/clock": true, "internal/vfs": true, "internal/logging": true,
		"history": true, "security": true},
	"cmd/skein": {"cli": true},
}

// stdOnly lists packages that import nothing beyond the standard library:
// history is shared with a chaos run's clients, whichever library they use
// (callers convert their records).
var stdOnly = map[string]bool{"history": true}

// forbiddenStd lists standard packages a layer must not use: storage reaches
// files only through internal/vfs.
var forbiddenStd = map[string][]string{
	"partition/store": {"os", "syscall"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func TestLayering(t *testing.T) {
	for _, p := range listPackages(t) {
		name, _ := rel(p.ImportPath)
		if name == "" || strings.HasPrefix(name, "tests") {
			continue // the root and end-to-end tests may import anything
		}
		layer, known := layers[name]
		if !known {
			t.Errorf("package %s is not in layers; add it there and to docs/architecture.md's package map", name)
			continue
		}
		for _, imp := range p.Imports {
			for _, bad := range forbiddenStd[name] {
				if imp == bad {
					t.Errorf("%s imports %q: storage reaches files only through internal/vfs", name, imp)
				}
			}
			dep, ours := rel(imp)
			if stdOnly[name] && (ours || strings.Contains(strings.Split(imp, "/")[0], ".")) {
				t.Errorf("%s imports %s: it imports the standard library only", name, imp)
			}
			if !ours {
				continue
			}
			if strings.HasSuffix(name, "test") && strings.TrimSuffix(name, "/"+lastElem(name)) == dep {
				continue
			}
			if allowed, ok := cmdAllowed[name]; ok && !allowed[dep] {
				t.Errorf("%s imports %s: of Skein's packages it may import only %v (cmdAllowed says why)", name, dep, slices.Sorted(maps.Keys(allowed)))
				continue
			}
			depLayer, known := layers[dep]
			if !known {
				continue // reported on its own
			}
			if depLayer >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", name, layer, dep, depLayer)
			}
		}
	}
}

func lastElem(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
