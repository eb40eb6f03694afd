//go:build kafkadiff

package diff

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApiVersions compares the APIs and version ranges each broker
// advertises, and the features (KIP-584) each supports and has finalized,
// at every version both speak.
func TestApiVersions(t *testing.T) {
	for v := int16(0); v <= commonMax(t, kmsg.NewPtrApiVersionsRequest()); v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "skein-diff", "1"
			newCase(t).compareAt(req, v)
		})
	}
}

// TestApiVersionsTooNew sends ApiVersions at a version neither broker
// speaks: both answer at v0 with UNSUPPORTED_VERSION and their key list
// (KIP-511).
func TestApiVersionsTooNew(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	newCase(t).compareAt(req, req.MaxVersion()+1)
}
