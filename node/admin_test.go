package node

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition"
)

// TestReadyz: /readyz is 503 with the reason until the metadata is loaded
// and the Kafka listener serves, and 200 then.
func TestReadyz(t *testing.T) {
	n := &Node{firstImage: make(chan struct{}), registry: partition.NewRegistry()}
	a := &adminServer{n: n}
	check := func(wantCode int, wantBody string) {
		t.Helper()
		rec := httptest.NewRecorder()
		a.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != wantCode || !strings.Contains(rec.Body.String(), wantBody) {
			t.Fatalf("/readyz = %d %q, want %d %q", rec.Code, rec.Body.String(), wantCode, wantBody)
		}
	}
	check(http.StatusServiceUnavailable, "metadata is loading")
	close(n.firstImage)
	check(http.StatusServiceUnavailable, "not serving")
	n.serving.Store(true)
	check(http.StatusOK, "ready")
	n.serving.Store(false) // Stop has begun
	check(http.StatusServiceUnavailable, "not serving")
}

// TestAdminListenTaken: a node whose admin address is taken does not
// start, and says why.
func TestAdminListenTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	cfg.AdminListen = taken.Addr().String()
	if n, err := Start(cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "node: admin listen") {
		if n != nil {
			n.Stop(t.Context())
		}
		t.Fatalf("Start = %v, want an admin listen error", err)
	}
}
