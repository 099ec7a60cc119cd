package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
)

// admin is the operator's endpoint for overrides: GET lists those in force,
// POST sets one on a named breaker, DELETE clears it. It answers only a
// local admin (see local).
type admin struct {
	breakers *breaker.Registry
	log      *slog.Logger
	origin   *http.CrossOriginProtection
}

func newAdmin(breakers *breaker.Registry, log *slog.Logger) *admin {
	return &admin{breakers: breakers, log: log, origin: http.NewCrossOriginProtection()}
}

// overrideView is an override in force, as GET lists it.
type overrideView struct {
	Breaker string    `json:"breaker"`
	Mode    string    `json:"mode"`
	Reason  string    `json:"reason"`
	By      string    `json:"by"`
	SetAt   time.Time `json:"set_at"`
	Expires time.Time `json:"expires"`
	Drops   int64     `json:"drops"`
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := a.local(r); err != nil {
		a.log.Warn("admin request refused", "method", r.Method, "remote", r.RemoteAddr, "error", err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		a.list(w)
	case http.MethodPost, http.MethodDelete:
		a.change(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
		http.Error(w, "admin: "+r.Method+" is not allowed", http.StatusMethodNotAllowed)
	}
}

// local refuses a request that does not come from a loopback address, and
// one that a browser sent from another site (a page on the admin's own
// machine could otherwise make the admin's browser post to it).
func (a *admin) local(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("admin: only from this machine, not from %s", r.RemoteAddr)
	}
	if err := a.origin.Check(r); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	return nil
}

func (a *admin) list(w http.ResponseWriter) {
	views := []overrideView{}
	a.breakers.Range(func(name string, b breaker.Breaker) bool {
		if o, ok := b.Override(); ok {
			views = append(views, overrideView{Breaker: name, Mode: o.Mode.String(), Reason: o.Reason,
				By: o.By, SetAt: o.SetAt, Expires: o.Expires, Drops: o.Drops})
		}
		return true
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(views)
}

// change sets (POST) or clears (DELETE) the override of the breaker named
// by the query's breaker; POST reads mode, ttl, reason and by too.
func (a *admin) change(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("breaker")
	b, ok := a.breakers.Lookup(name) // an admin's typo must not make a breaker, as Get would
	if !ok {
		http.Error(w, fmt.Sprintf("admin: no breaker named %q", name), http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		b.ClearOverride()
		a.log.Info("admin cleared an override", "breaker", name, "remote", r.RemoteAddr)
		fmt.Fprintf(w, "override of %s cleared\n", name)
		return
	}

	o, err := parseOverride(q.Get("mode"), q.Get("ttl"), q.Get("reason"), q.Get("by"))
	if err == nil {
		err = b.SetOverride(o)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.log.Info("admin set an override", "breaker", name, "mode", o.Mode.String(), "ttl", o.TTL,
		"remote", r.RemoteAddr)
	fmt.Fprintf(w, "override %s of %s set for %v\n", o.Mode, name, o.TTL)
}

// parseOverride reads an override from the admin's query.
func parseOverride(mode, ttl, reason, by string) (override.Spec, error) {
	o := override.Spec{Reason: reason, By: by}
	switch mode {
	case override.ShedAll.String():
		o.Mode = override.ShedAll
	case override.ShedNone.String():
		o.Mode = override.ShedNone
	default:
		return o, fmt.Errorf("admin: mode %q: must be %s or %s", mode, override.ShedAll, override.ShedNone)
	}
	if ttl == "" {
		return o, errors.New("admin: ttl is missing: say how long the override lasts (30m, 2h), at most 24h")
	}
	d, err := time.ParseDuration(ttl)
	if err != nil {
		return o, fmt.Errorf("admin: ttl %q: %w", ttl, err)
	}
	o.TTL = d
	if o.By == "" {
		o.By = "admin"
	}
	return o, nil
}
