//go:build !race

package nodetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/skeinlog/skein/chaos"
	"github.com/skeinlog/skein/configs"
)

// A link fault with "both" set on node 1 toward node 2 is set by node 2
// toward node 1 as well (asked over remoting), and healing it with
// ?both=true on node 1 heals both sides; node 3, without chaos.enable,
// refuses its side, and node 1 then sets nothing.
func TestLinkFaultOnBothSides(t *testing.T) {
	c := Start(t, 3, func(cfg *configs.Node) { cfg.ChaosEnable = cfg.NodeID != 3 })
	ctx := context.Background()
	admin := func(i int) *chaos.Admin { return &chaos.Admin{Addr: c.Nodes[i].AdminAddr().String()} }
	links := func(i int) []int32 {
		ls, err := admin(i).Links(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var peers []int32
		for _, l := range ls {
			peers = append(peers, l.Peer)
		}
		return peers
	}
	if err := admin(0).SetLink(ctx, chaos.Link{Peer: 2, Cut: true, Both: true, For: "1m"}); err != nil {
		t.Fatal(err)
	}
	if got := links(0); len(got) != 1 || got[0] != 2 {
		t.Fatalf("node 1's link faults: peers %v, want [2]", got)
	}
	waitFor(t, "node 2's side of the link to node 1", func() string {
		if got := links(1); len(got) != 1 || got[0] != 1 {
			return fmt.Sprintf("node 2's link faults: peers %v, want [1]", got)
		}
		return ""
	})

	req, err := http.NewRequest(http.MethodDelete, "http://"+c.Nodes[0].AdminAddr().String()+"/v1/links/2?both=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healing both sides: %s", resp.Status)
	}
	if a, b := links(0), links(1); len(a) != 0 || len(b) != 0 {
		t.Fatalf("after healing both sides: node 1 has %v, node 2 has %v", a, b)
	}

	err = admin(0).SetLink(ctx, chaos.Link{Peer: 3, Cut: true, Both: true, For: "1m"})
	var apiErr *chaos.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway {
		t.Fatalf("cutting both sides with node 3, whose chaos is off: %v, want 502", err)
	}
	if got := links(0); len(got) != 0 {
		t.Fatalf("node 1 set its side although node 3 refused: %v", got)
	}
}
