package node

// The extensions part of the admin API: the kinds of extension this binary
// has, and the extension instances of the cluster, which are cluster
// metadata (image.Extension) set through the controller. Not gated by
// chaos.enable: it changes what the cluster runs, not how it fails.
//
//	GET    /v1/extension-kinds       the kinds registered in this binary:
//	                                 {"kinds": [{"name", "doc", "settings":
//	                                 [{"name", "default", "required", "doc",
//	                                 "common"}]}]}; common settings are the
//	                                 ones every kind takes
//	GET    /v1/extensions            the instances in this node's image, by
//	                                 name: {"extensions": [{"name", "kind",
//	                                 "settings", "partitions"}]}, partitions
//	                                 being the source partitions this node
//	                                 processes for it (extension.Status)
//	GET    /v1/extensions/{name}     one instance; 404 if there is none
//	POST   /v1/extensions            {"name": "mirror", "kind": "copy",
//	                                 "settings": {"source.topics": "orders"}}:
//	                                 201 with the instance once the cluster
//	                                 committed it; 400 for a bad name, a kind
//	                                 this binary lacks or settings the kind
//	                                 refuses, 409 if the name exists
//	DELETE /v1/extensions/{name}     200 {"deleted": name}; 404 if there is none
//
// The settings are stored as given, the kind's defaults left out, so that
// a later binary's defaults reach the instances that did not set them;
// they are checked against the kind (extension.Kind.Resolve) before they
// are stored. Until the node has loaded the cluster's metadata every
// endpoint but the kinds answers 503; a controller that does not commit
// in time is 503 too.
//
// The node also sets the instances of its configuration (extensions in
// configs.Node) at start: setConfiguredExtensions.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/extension"
)

// extensionTimeout bounds the controller's wait for the quorum on an
// extension change; the admin request waits a little longer, so that the
// controller's own REQUEST_TIMED_OUT comes first.
const extensionTimeout = 20 * time.Second

// extensionDef is an extension instance in the admin API.
type extensionDef struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Settings map[string]string `json:"settings"`
	// Partitions are the source partitions this node processes for the
	// instance (those it leads), in GET answers.
	Partitions []extension.Status `json:"partitions,omitempty"`
}

// extensionKindInfo is a kind of GET /v1/extension-kinds.
type extensionKindInfo struct {
	Name     string                 `json:"name"`
	Doc      string                 `json:"doc"`
	Settings []extensionSettingInfo `json:"settings"`
}

type extensionSettingInfo struct {
	Name     string `json:"name"`
	Default  string `json:"default,omitempty"`
	Required bool   `json:"required,omitempty"`
	Doc      string `json:"doc"`
	// Common marks a setting every kind takes (extension.CommonSettings).
	Common bool `json:"common,omitempty"`
}

func toExtensionDef(e *image.Extension) extensionDef {
	s := maps.Clone(e.Settings)
	if s == nil {
		s = map[string]string{}
	}
	return extensionDef{Name: e.Name, Kind: e.Kind, Settings: s}
}

// extensionRoutes adds the extensions API to mux.
func (a *adminServer) extensionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/extension-kinds", a.extensionKinds)
	mux.HandleFunc("GET /v1/extensions", a.loaded(a.listExtensions))
	mux.HandleFunc("GET /v1/extensions/{name}", a.loaded(a.getExtension))
	mux.HandleFunc("POST /v1/extensions", a.loaded(a.createExtension))
	mux.HandleFunc("DELETE /v1/extensions/{name}", a.loaded(a.deleteExtension))
}

// loaded answers 503 for h until the node has loaded the cluster's
// metadata: before, its image would show no extensions, wrongly.
func (a *adminServer) loaded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-a.n.firstImage:
			h(w, r)
		default:
			writeError(w, http.StatusServiceUnavailable, "the cluster metadata is loading")
		}
	}
}

func (a *adminServer) extensionKinds(w http.ResponseWriter, _ *http.Request) {
	out := []extensionKindInfo{}
	for _, k := range extension.Kinds() {
		info := extensionKindInfo{Name: k.Name, Doc: k.Doc, Settings: []extensionSettingInfo{}}
		add := func(s extension.Setting, common bool) {
			info.Settings = append(info.Settings, extensionSettingInfo{Name: s.Name, Default: s.Default, Required: s.Required, Doc: s.Doc, Common: common})
		}
		for _, s := range extension.CommonSettings {
			add(s, true)
		}
		for _, s := range k.Settings {
			add(s, false)
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, struct {
		Kinds []extensionKindInfo `json:"kinds"`
	}{out})
}

// withPartitions adds this node's statuses of the instance to d.
func (a *adminServer) withPartitions(d extensionDef, statuses []extension.Status) extensionDef {
	for _, s := range statuses {
		if s.Instance == d.Name {
			d.Partitions = append(d.Partitions, s)
		}
	}
	return d
}

func (a *adminServer) listExtensions(w http.ResponseWriter, _ *http.Request) {
	im := a.n.image.Load()
	statuses := a.n.extensions.Statuses()
	out := []extensionDef{}
	for _, name := range im.ExtensionNames() {
		out = append(out, a.withPartitions(toExtensionDef(im.Extensions[name]), statuses))
	}
	writeJSON(w, http.StatusOK, struct {
		Extensions []extensionDef `json:"extensions"`
	}{out})
}

func (a *adminServer) getExtension(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	e, ok := a.n.image.Load().Extensions[name]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no extension %q", name))
		return
	}
	writeJSON(w, http.StatusOK, a.withPartitions(toExtensionDef(e), a.n.extensions.Statuses()))
}

func (a *adminServer) createExtension(w http.ResponseWriter, r *http.Request) {
	var j extensionDef
	if !decodeBody(w, r, "extension", &j) {
		return
	}
	e := &image.Extension{Name: j.Name, Kind: j.Kind, Settings: j.Settings}
	if len(e.Settings) == 0 {
		e.Settings = nil
	}
	if err := checkExtension(e); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := a.n.image.Load().Extensions[e.Name]; ok {
		writeError(w, http.StatusConflict, fmt.Sprintf("extension %q exists", e.Name))
		return
	}
	if status, msg := a.n.alterExtensions(&controller.AlterExtensions{Set: e}); status != http.StatusOK {
		writeError(w, status, msg)
		return
	}
	a.n.log.Info().Str("extension", e.Name).Str("kind", e.Kind).Msg("extension created")
	writeJSON(w, http.StatusCreated, toExtensionDef(e))
}

func (a *adminServer) deleteExtension(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if status, msg := a.n.alterExtensions(&controller.AlterExtensions{Delete: name}); status != http.StatusOK {
		writeError(w, status, msg)
		return
	}
	a.n.log.Info().Str("extension", name).Msg("extension deleted")
	writeJSON(w, http.StatusOK, struct {
		Deleted string `json:"deleted"`
	}{name})
}

// checkExtension checks an instance as this node can before the
// controller stores it: its name, and its kind and settings against the
// kinds compiled into this binary.
func checkExtension(e *image.Extension) error {
	if msg := controller.ValidateExtensionName(e.Name); msg != "" {
		return errors.New(msg)
	}
	if e.Kind == "" {
		return fmt.Errorf("extension %q names no kind", e.Name)
	}
	k, ok := extension.Lookup(e.Kind)
	if !ok {
		var names []string
		for _, k := range extension.Kinds() {
			names = append(names, k.Name)
		}
		return fmt.Errorf("no extension kind %q in this binary (it has: %s)", e.Kind, strings.Join(names, ", "))
	}
	if _, err := k.Resolve(e.Settings); err != nil {
		return err
	}
	return nil
}

// alterExtensions asks the controller for m and returns, as an HTTP status
// with a message, how it went: 200 once committed (or when there was
// nothing to change).
func (n *Node) alterExtensions(m *controller.AlterExtensions) (int, string) {
	c := n.children.Load()
	if c == nil {
		return http.StatusServiceUnavailable, "the node's controller is not running yet"
	}
	m.TimeoutMs = int32(extensionTimeout / time.Millisecond)
	res, err := actors.Ask(n.sys, c.controller, m, extensionTimeout+5*time.Second)
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Sprintf("asking the controller: %v", err)
	}
	r := res.(*controller.AlterExtensionsResult)
	if r.Err == nil {
		return http.StatusOK, ""
	}
	msg := r.Message
	if msg == "" {
		msg = r.Err.Error()
	}
	switch r.Err {
	case kerr.InvalidRequest:
		return http.StatusBadRequest, msg
	case kerr.DuplicateResource:
		return http.StatusConflict, msg
	case kerr.ResourceNotFound:
		return http.StatusNotFound, msg
	case kerr.RequestTimedOut:
		return http.StatusServiceUnavailable, msg
	}
	return http.StatusInternalServerError, fmt.Sprintf("%s: %s", r.Err.Message, msg)
}

// The backoff of setConfiguredExtensions' retries.
const (
	configuredExtensionsMinBackoff = 100 * time.Millisecond
	configuredExtensionsMaxBackoff = 30 * time.Second
)

// setConfiguredExtensions sets the extensions of the node's configuration
// that the cluster's metadata lacks, or holds with another definition,
// once the node has loaded it (its broker is registered): each is checked
// as POST /v1/extensions checks one and set through the controller,
// replacing what is there. One that fails is logged once, with the
// reason, and tried again with backoff until it lands; the retries end
// when the node stops (its actor tree is gone, or ctx ends).
//
// It runs on a goroutine of its own, started with the admin listener.
func (n *Node) setConfiguredExtensions(ctx context.Context) {
	pending := n.cfg.Extensions
	if len(pending) == 0 {
		return
	}
	select {
	case <-n.firstImage:
	case <-n.done:
		return
	case <-ctx.Done():
		return
	}
	failing := map[string]bool{}
	backoff := configuredExtensionsMinBackoff
	for {
		var again []configs.Extension
		for _, ce := range pending {
			err := n.setConfiguredExtension(ce)
			switch {
			case err == nil && failing[ce.Name]:
				n.log.Info().Str("extension", ce.Name).Str("kind", ce.Kind).Msg("extension of the configuration set, after failures")
				delete(failing, ce.Name)
			case err != nil && !failing[ce.Name]:
				n.log.Error().Err(err).Str("extension", ce.Name).Str("kind", ce.Kind).
					Msg("setting an extension of the configuration failed; retrying with backoff, without logging each retry")
				failing[ce.Name] = true
			}
			if err != nil {
				again = append(again, ce)
			}
		}
		if pending = again; len(pending) == 0 {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-n.done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, configuredExtensionsMaxBackoff)
	}
}

// setConfiguredExtension sets one extension of the configuration, unless
// the image holds it as configured.
func (n *Node) setConfiguredExtension(ce configs.Extension) error {
	e := &image.Extension{Name: ce.Name, Kind: ce.Kind, Settings: maps.Clone(ce.Settings)}
	if len(e.Settings) == 0 {
		e.Settings = nil
	}
	if cur, ok := n.image.Load().Extensions[e.Name]; ok && cur.Equal(e) {
		return nil
	}
	if err := checkExtension(e); err != nil {
		return err
	}
	if status, msg := n.alterExtensions(&controller.AlterExtensions{Set: e, Replace: true}); status != http.StatusOK {
		return errors.New(msg)
	}
	n.log.Info().Str("extension", e.Name).Str("kind", e.Kind).Msg("extension of the configuration set")
	return nil
}
