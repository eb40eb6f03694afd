package configs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/magiconair/properties"
)

// isProperties reports whether path names a Java properties file, as
// Kafka's server.properties.
func isProperties(path string) bool {
	return slices.Contains([]string{".properties", ".props", ".prop"}, strings.ToLower(filepath.Ext(path)))
}

// readProperties reads a Java properties file (continuation lines,
// escapes and all) into flat keys; a key Skein does not know is an error,
// as in a YAML file. ${...} is left as written: Kafka does not expand it
// there either (its config providers are not supported).
func readProperties(path string) (map[string]string, error) {
	l := &properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configs: reading %s: %w", path, err)
	}
	out := make(map[string]string, p.Len())
	for _, key := range p.Keys() {
		val, _ := p.Get(key)
		out[key] = strings.TrimSpace(val)
		if !known(key) {
			return nil, &Error{Key: key, Value: val, Reason: unknownKey(key, path)}
		}
	}
	return out, nil
}
