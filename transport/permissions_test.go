package transport

import (
	"slices"
	"testing"

	"github.com/skeinlog/skein/security"
)

// Every API key served has its line in the permission table, and the
// table names no key that is not served: the table is the whole truth
// of what a request needs.
func TestPermissionTableCoversEveryKey(t *testing.T) {
	a := NewAPI(Deps{}, nil)
	for key := range int16(maxKey + 1) {
		_, tabled := permissions[key]
		served := a.handler(key).handle != nil
		if served != tabled {
			t.Errorf("api key %d: served %v, in the permission table %v", key, served, tabled)
		}
		for _, acc := range permissions[key] {
			if !slices.Contains(security.Operations(acc.rt), acc.op) {
				t.Errorf("api key %d: %s is not an operation of %s", key, acc.op, acc.rt)
			}
		}
	}
}
