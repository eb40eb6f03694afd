package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/extension"
)

// testKind is a kind of extension of this test binary only: its
// extensions do nothing.
const testKind = "nodetest-noop"

func init() {
	extension.Register(extension.Kind{
		Name: testKind,
		Doc:  "does nothing (node tests)",
		Settings: []extension.Setting{
			{Name: "greeting", Default: "hello", Doc: "what it would say"},
			{Name: "target", Required: true, Doc: "where it would say it"},
		},
		New: func(extension.Instance) (extension.Extension, error) { return noopExtension{}, nil },
	})
}

type noopExtension struct{}

func (noopExtension) Process([]extension.Record, extension.Output) error { return nil }

// startExtensionNode starts a node with its admin listener on a free port
// and returns it with its admin address; log, if not nil, takes its log.
func startExtensionNode(t *testing.T, dir string, log *syncBuffer, exts ...configs.Extension) (*Node, string) {
	t.Helper()
	cfg := configs.Default()
	cfg.DataDir = dir
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	cfg.Extensions = exts
	logger := zerolog.Nop()
	if log != nil {
		logger = zerolog.New(log)
	}
	n, err := Start(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	return n, n.AdminAddr().String()
}

// adminDo sends a request to an admin API and returns its status and body.
func adminDo(t *testing.T, addr, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestExtensionsAPI: the kinds of the binary are listed with the common
// settings; instances are created (settings as given), listed, described
// and deleted; and each mistake has its status and says what it is.
func TestExtensionsAPI(t *testing.T) {
	_, addr := startExtensionNode(t, filepath.Join(t.TempDir(), "data"), nil)
	expect := func(method, path, body string, wantStatus int, wantBody ...string) string {
		t.Helper()
		status, got := adminDo(t, addr, method, path, body)
		if status != wantStatus {
			t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, status, got, wantStatus)
		}
		for _, w := range wantBody {
			if !strings.Contains(got, w) {
				t.Fatalf("%s %s %s: %s\nwant it to contain %s", method, path, body, got, w)
			}
		}
		return got
	}

	var kinds struct{ Kinds []extensionKindInfo }
	if err := json.Unmarshal([]byte(expect("GET", "/v1/extension-kinds", "", http.StatusOK)), &kinds); err != nil {
		t.Fatal(err)
	}
	var mine *extensionKindInfo
	for i := range kinds.Kinds {
		if kinds.Kinds[i].Name == testKind {
			mine = &kinds.Kinds[i]
		}
	}
	if mine == nil {
		t.Fatalf("%s not among the kinds: %+v", testKind, kinds.Kinds)
	}
	want := []extensionSettingInfo{
		{Name: extension.SettingSourceTopics, Required: true, Doc: extension.CommonSettings[0].Doc, Common: true},
		{Name: extension.SettingStart, Default: "earliest", Doc: extension.CommonSettings[1].Doc, Common: true},
		{Name: extension.SettingOutputTransactions, Default: "false", Doc: extension.CommonSettings[2].Doc, Common: true},
		{Name: extension.SettingSourceBootstrap, Doc: extension.CommonSettings[3].Doc, Common: true},
		{Name: "greeting", Default: "hello", Doc: "what it would say"},
		{Name: "target", Required: true, Doc: "where it would say it"},
	}
	if mine.Doc != "does nothing (node tests)" || !reflect.DeepEqual(mine.Settings, want) {
		t.Errorf("kind %+v, want settings %+v", mine, want)
	}

	expect("GET", "/v1/extensions", "", http.StatusOK, `"extensions": []`)
	good := `{"name": "mirror", "kind": "` + testKind + `", "settings": {"source.topics": "orders", "target": "t"}}`
	got := expect("POST", "/v1/extensions", good, http.StatusCreated)
	var def extensionDef
	if err := json.Unmarshal([]byte(got), &def); err != nil {
		t.Fatal(err)
	}
	// As given: the defaults (greeting, source.start) are not stored.
	wantDef := extensionDef{Name: "mirror", Kind: testKind, Settings: map[string]string{"source.topics": "orders", "target": "t"}}
	if !reflect.DeepEqual(def, wantDef) {
		t.Errorf("created %+v, want %+v", def, wantDef)
	}
	expect("POST", "/v1/extensions", `{"name": "audit", "kind": "`+testKind+`", "settings": {"source.topics": "a.*", "target": "u", "greeting": "hi"}}`, http.StatusCreated)
	var list struct{ Extensions []extensionDef }
	if err := json.Unmarshal([]byte(expect("GET", "/v1/extensions", "", http.StatusOK)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Extensions) != 2 || list.Extensions[0].Name != "audit" || !reflect.DeepEqual(list.Extensions[1], wantDef) {
		t.Errorf("list %+v", list.Extensions)
	}
	expect("GET", "/v1/extensions/mirror", "", http.StatusOK, `"source.topics": "orders"`)

	expect("POST", "/v1/extensions", good, http.StatusConflict, `extension \"mirror\" exists`)
	expect("POST", "/v1/extensions", `{"name": "x", "kind": "nope"}`, http.StatusBadRequest, `no extension kind \"nope\"`, testKind)
	expect("POST", "/v1/extensions", `{"name": "x", "kind": "`+testKind+`", "settings": {"source.topics": "t"}}`, http.StatusBadRequest, "needs the setting target")
	expect("POST", "/v1/extensions", `{"name": "x", "kind": "`+testKind+`", "settings": {"source.topics": "t", "target": "t", "colour": "red"}}`, http.StatusBadRequest, "takes no setting colour")
	expect("POST", "/v1/extensions", `{"name": "x", "kind": "`+testKind+`", "settings": {"source.topics": "(", "target": "t"}}`, http.StatusBadRequest, "source.topics")
	expect("POST", "/v1/extensions", `{"name": "a b", "kind": "`+testKind+`"}`, http.StatusBadRequest, `Extension name \"a b\" is illegal`)
	expect("POST", "/v1/extensions", `{"name": "x"}`, http.StatusBadRequest, `extension \"x\" names no kind`)
	expect("POST", "/v1/extensions", `{"name": "x", "kynd": "k"}`, http.StatusBadRequest, "unknown field")

	expect("DELETE", "/v1/extensions/mirror", "", http.StatusOK, `"deleted": "mirror"`)
	expect("DELETE", "/v1/extensions/mirror", "", http.StatusNotFound, `no extension \"mirror\"`)
	expect("GET", "/v1/extensions/mirror", "", http.StatusNotFound, `no extension \"mirror\"`)
	expect("GET", "/v1/extensions", "", http.StatusOK, `"name": "audit"`)
}

// TestConfiguredExtensions: the extensions of a node's configuration are
// set at start, replacing another definition of the same name; one that
// cannot be set is logged once however often it is retried.
func TestConfiguredExtensions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	one := configs.Extension{Name: "mirror", Kind: testKind, Settings: map[string]string{"source.topics": "orders", "target": "t"}}
	bad := configs.Extension{Name: "broken", Kind: "no-such-kind"}
	var log syncBuffer
	n, addr := startExtensionNode(t, dir, &log, one, bad)
	waitExtension(t, addr, "mirror", `"target": "t"`)
	// The broken one is retried with backoff (100 ms doubling), a few
	// times by now, and logged once.
	time.Sleep(time.Second)
	if c := strings.Count(log.String(), `no extension kind \"no-such-kind\"`); c != 1 {
		t.Errorf("the failing extension was logged %d times:\n%s", c, log.String())
	}
	if status, body := adminDo(t, addr, "GET", "/v1/extensions/broken", ""); status != http.StatusNotFound {
		t.Errorf("the broken extension: %d %s", status, body)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Started again with another definition: it replaces the stored one.
	two := one
	two.Settings = map[string]string{"source.topics": "orders", "target": "elsewhere"}
	_, addr = startExtensionNode(t, dir, nil, two)
	waitExtension(t, addr, "mirror", `"target": "elsewhere"`)
}

// waitExtension waits until the admin API at addr shows the extension name
// with want in its definition.
func waitExtension(t *testing.T, addr, name, want string) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		status, body := adminDo(t, addr, "GET", "/v1/extensions/"+name, "")
		if status == http.StatusOK && strings.Contains(body, want) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("extension %s never showed %s; last: %d %s", name, want, status, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
