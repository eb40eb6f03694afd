package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/configs"
)

type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

func TestStartStop(t *testing.T) {
	cfg := configs.Default()
	cfg.NodeID = 3
	cfg.DataDir = filepath.Join(t.TempDir(), "nested", "data")
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	var buf syncBuffer
	n, err := Start(cfg, zerolog.New(&buf))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(cfg.DataDir); err != nil || !fi.IsDir() {
		t.Fatalf("data.dir not created: %v", err)
	}
	if n.root.Id != "node/3" {
		t.Errorf("root actor id = %q, want node/3", n.root.Id)
	}
	if _, ok := n.sys.ProcessRegistry.Get(n.root); !ok {
		t.Errorf("root actor not registered")
	}
	select {
	case <-n.Done():
		t.Fatal("Done closed before Stop")
	default:
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-n.Done()
	if err := n.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
	log := buf.String()
	for _, want := range []string{`"message":"node started"`, `"actor":"node/3"`, `"message":"node stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Count(log, "node stopped") != 1 {
		t.Errorf("want one stopped line:\n%s", log)
	}
}

func TestStartDataDirError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(file, "data")
	if _, err := Start(cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "node: creating data.dir") {
		t.Fatalf("Start = %v, want a data.dir error", err)
	}
}
