package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Transport serves the model's API over HTTP in memory: use it as the
// Transport of a rest.Config whose Host names the client's connection
// (e.g. "https://informers", "https://probe"); clients with the same host
// share a connection, as client-go's clients of equal configurations do.
func (c *Cluster) Transport() http.RoundTripper { return transport{c} }

type transport struct{ c *Cluster }

// request is a parsed API request.
type request struct {
	verb      string // list, watch, get, patch, create, delete
	res       *Resource
	namespace string
	name      string
	q         map[string]string
	meta      bool
	body      []byte
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	ctx := req.Context()
	if err := c.awaitTurn(ctx, req.URL.Host+" "+req.Method+" "+req.URL.RequestURI()+" "+string(body)); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.advanceLocked(now())
	h := c.hostLocked(req.URL.Host)
	var held *conn // HTTP/1.1: the idle connection a request took while frozen
	for h.frozen {
		thaw, turn := h.thaw, c.turnLocked()
		// on HTTP/2's frozen connection the request hangs until the
		// health check closes it; on HTTP/1.1 it takes an idle one and
		// hangs until the thaw; with none, it dials one, whose TLS
		// handshake gets no answer
		var lost chan struct{}
		var deadline time.Time
		var dial *time.Timer
		var dialed <-chan time.Time
		switch cn := liveConnLocked(h); {
		case cn != nil && cn.lost != nil:
			lost = cn.lost
		case h.pooled && held == nil:
			held = c.idleConnLocked(h)
		}
		if lost == nil && held == nil {
			deadline = now().Add(tlsHandshakeTimeout)
			dial = time.NewTimer(tlsHandshakeTimeout)
			dialed = dial.C
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-lost:
		case <-dialed:
		case <-thaw:
		}
		if dial != nil {
			dial.Stop()
		}
		// which came first, of the thaw, the health check, the dial's
		// timeout and the client giving up, is the model's to say (its
		// scheduled work runs in time order), not the select's
		c.mu.Lock()
		c.advanceLocked(now())
		switch {
		case isClosed(thaw):
		case isClosed(lost):
			c.mu.Unlock()
			return nil, errConnLost
		case !deadline.IsZero() && !now().Before(deadline):
			c.mu.Unlock()
			return nil, errTLSHandshakeTimeout
		default:
			if held != nil {
				c.closeLocked(held) // a request given up closes its HTTP/1.1 connection
			}
			c.mu.Unlock()
			return nil, ctx.Err()
		}
		c.mu.Unlock()
		// the requests a thaw releases go on one at a time
		time.Sleep(turn)
		c.mu.Lock()
		c.advanceLocked(now())
	}
	cn := held
	if cn == nil || cn.server == nil { // (a thaw's reset closed it)
		cn = c.connOfLocked(h)
	}
	srv := c.routeLocked(cn)
	if srv == nil {
		c.releaseLocked(cn)
		c.mu.Unlock()
		// as the dialer reports it: client-go tells a refused connection
		// (an API server down) by ECONNREFUSED, and its reflector retries
		// the watch then rather than relisting
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	r, aerr := c.parseLocked(req, body)
	if aerr == nil && r.verb == "watch" {
		return c.watchLocked(ctx, req, cn, srv, r) // unlocks; the watch holds cn until it ends
	}
	// every other request holds its connection until its answer arrived;
	// one the client gave up on before closes an HTTP/1.1 connection (Go's
	// transport cannot tell where the answer would end), so the next
	// request dials one the balancer places anew
	var answered bool
	defer func() {
		c.mu.Lock()
		if answered {
			cn.readLocked(now())
		}
		if !answered && ctx.Err() != nil && cn.h.pooled {
			c.closeLocked(cn)
		} else {
			c.releaseLocked(cn)
		}
		c.mu.Unlock()
	}()
	if aerr == nil && (h.only == "" || h.only == r.res.Name) {
		switch {
		case h.hang:
			c.mu.Unlock()
			<-ctx.Done()
			return nil, ctx.Err()
		case h.refuse != 0:
			aerr = &apiError{Code: h.refuse, Reason: http.StatusText(h.refuse), Message: "refused by the simulation"}
		}
	}
	if aerr == nil && srv.cut && r.needsEtcd() && !c.awaitEtcdLocked(ctx, srv, requestTimeout) {
		// its server cut off etcd: it hung until its timeout (or the
		// server stopped, or the client gave up)
		switch {
		case ctx.Err() != nil:
			c.mu.Unlock()
			return nil, ctx.Err()
		case !srv.up:
			aerr = &apiError{Code: 503, Reason: "ServiceUnavailable", Message: "the server is shutting down"}
		default:
			aerr = errTimeout
		}
	}
	// an answer reaches the client a turn late, so that a write's answer
	// and its watch event, due at one instant, come in the seed's order
	delay := srv.latency + h.latency + c.turnLocked()
	if aerr != nil {
		c.mu.Unlock()
		resp, err := respond(ctx, req, h, delay, aerr.Code, aerr.status())
		answered = err == nil
		return resp, err
	}
	if r.verb == "list" && r.q["limit"] != "1" {
		delay += c.listLatencyLocked()
	}
	code, out, e := c.serveLocked(ctx, cn, srv, r) // unlocks
	resp, err := respond(ctx, req, h, delay, code, out)
	answered = err == nil
	if err == nil && e != nil {
		c.mu.Lock()
		e(c, now())
		c.mu.Unlock()
	}
	return resp, err
}

// isClosed reports whether ch (nil: never) is closed.
func isClosed(ch chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// respond answers after delay, unless the client gives up first, in host
// h's protocol.
func respond(ctx context.Context, req *http.Request, h *hostConns, delay time.Duration, code int, body []byte) (*http.Response, error) {
	if delay > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
	header := http.Header{"Content-Type": []string{"application/json"}}
	if code == http.StatusTooManyRequests || code >= 500 {
		// kube-apiserver sends a Status's retryAfterSeconds as the
		// Retry-After header too, and client-go retries on it (up to 10
		// times): a List from a resource version its watch cache has not
		// reached fails after about 40s, not after one 3s wait
		var st struct {
			Details struct {
				RetryAfterSeconds int `json:"retryAfterSeconds"`
			} `json:"details"`
		}
		if json.Unmarshal(body, &st) == nil && st.Details.RetryAfterSeconds > 0 {
			header.Set("Retry-After", strconv.Itoa(st.Details.RetryAfterSeconds))
		}
	}
	return response{
		StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code),
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}.withProto(h), nil
}

// response is an http.Response under construction.
type response http.Response

// withProto sets the protocol of host h's connections: HTTP/1.1 when
// pooled, else HTTP/2.0 (what a client can read of it).
func (r response) withProto(h *hostConns) *http.Response {
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	if h.pooled {
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	}
	resp := http.Response(r)
	return &resp
}

// parseLocked maps a request to a resource and a verb.
func (c *Cluster) parseLocked(req *http.Request, body []byte) (*request, *apiError) {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group, version string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		version, segs = segs[1], segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		group, version, segs = segs[1], segs[2], segs[3:]
	default:
		return nil, &apiError{Code: 404, Reason: "NotFound", Message: "the server could not find the requested resource"}
	}
	r := &request{q: map[string]string{}, body: body}
	for k, v := range req.URL.Query() {
		if len(v) > 0 {
			r.q[k] = v[0]
		}
	}
	var plural string
	switch {
	case len(segs) == 1:
		plural = segs[0]
	case len(segs) == 2:
		plural, r.name = segs[0], segs[1]
	case len(segs) == 3 && segs[0] == "namespaces":
		r.namespace, plural = segs[1], segs[2]
	case len(segs) == 4 && segs[0] == "namespaces":
		r.namespace, plural, r.name = segs[1], segs[2], segs[3]
	default:
		return nil, &apiError{Code: 404, Reason: "NotFound", Message: "the server could not find the requested resource"}
	}
	name := plural
	if group != "" {
		name += "." + group
	}
	res := c.resources[name]
	if res == nil || !res.exists || res.Version != version {
		return nil, &apiError{Code: 404, Reason: "NotFound", Message: "the server could not find the requested resource"}
	}
	r.res = res
	r.meta = strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")
	if sel := r.q["labelSelector"]; !validSelector(sel) {
		return nil, &apiError{Code: 400, Reason: "BadRequest", Message: "the model serves no label selector but " + ShardLabel + "=a or " + ShardLabel + "=b, not " + sel}
	}
	if sel := r.q["fieldSelector"]; !validField(sel) {
		return nil, &apiError{Code: 400, Reason: "BadRequest", Message: "the model serves no field selector but " + nameField + "NAME, not " + sel}
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case r.name != "":
			r.verb = "get"
		case r.q["watch"] == "true" || r.q["watch"] == "1":
			r.verb = "watch"
		default:
			r.verb = "list"
		}
	case http.MethodPatch:
		r.verb = "patch"
	case http.MethodPost:
		r.verb = "create"
	case http.MethodDelete:
		r.verb = "delete"
	default:
		return nil, &apiError{Code: 405, Reason: "MethodNotAllowed", Message: req.Method}
	}
	return r, nil
}

// requestTimeout is kube-apiserver's timeout of a request that is not a
// watch (--request-timeout, 60s by default): a request that needs etcd on
// a server cut off it fails then (CutOff).
const requestTimeout = 60 * time.Second

// defaultWatchTimeout is how long a watch that asked for no timeout may
// last (kube-apiserver's --min-request-timeout, 30 min, at the least).
const defaultWatchTimeout = 30 * time.Minute

// needsEtcd reports whether serving r (not a watch) needs etcd itself, not
// only the watch cache: a consistent List (resourceVersion unset; its
// continuations are served from the first page's snapshot), a Get but at
// resourceVersion 0, and every write.
func (r *request) needsEtcd() bool {
	switch r.verb {
	case "list":
		return r.q["resourceVersion"] == "" && r.q["continue"] == ""
	case "get":
		return r.q["resourceVersion"] != "0"
	case "watch":
		return false
	}
	return true
}

// scope is what a list or watch of the request selects.
func (r *request) scope() Scope {
	return Scope{Namespace: r.namespace, Selector: r.q["labelSelector"], Field: r.q["fieldSelector"]}
}

// serveLocked serves everything but watches; it unlocks the model.
func (c *Cluster) serveLocked(ctx context.Context, cn *conn, srv *APIServer, r *request) (int, []byte, effect) {
	defer c.mu.Unlock()
	tx := &Tx{c: c}
	res := r.res
	switch r.verb {
	case "get":
		o := tx.Get(res.Name, r.namespace, r.name)
		if o == nil {
			return 404, (&apiError{Code: 404, Reason: "NotFound", Message: r.name + " not found"}).status(), nil
		}
		return 200, encodeObject(res, o, r.meta), nil
	case "list":
		return c.listLocked(ctx, cn, srv, r)
	case "patch":
		var p struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			return 400, (&apiError{Code: 400, Reason: "BadRequest", Message: err.Error()}).status(), nil
		}
		w := tx.Update(res.Name, r.namespace, r.name, func(o *Object) {
			for k, v := range p.Metadata.Annotations {
				if o.Annotations == nil {
					o.Annotations = map[string]string{}
				}
				o.Annotations[k] = v
			}
		})
		if w == nil {
			return 404, (&apiError{Code: 404, Reason: "NotFound", Message: r.name + " not found"}).status(), nil
		}
		return 200, encodeObject(res, w.Obj, r.meta), nil
	case "create":
		var p struct {
			Metadata jsonMeta `json:"metadata"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			return 400, (&apiError{Code: 400, Reason: "BadRequest", Message: err.Error()}).status(), nil
		}
		w := tx.Create(res.Name, r.namespace, p.Metadata.Name, func(o *Object) { o.Annotations = p.Metadata.Annotations })
		if w == nil {
			return 409, (&apiError{Code: 409, Reason: "AlreadyExists", Message: p.Metadata.Name + " already exists"}).status(), nil
		}
		return 201, encodeObject(res, w.Obj, r.meta), nil
	case "delete":
		w := tx.Delete(res.Name, r.namespace, r.name)
		if w == nil {
			return 404, (&apiError{Code: 404, Reason: "NotFound", Message: r.name + " not found"}).status(), nil
		}
		return 200, encodeObject(res, w.Obj, r.meta), nil
	}
	return 405, (&apiError{Code: 405, Reason: "MethodNotAllowed", Message: r.verb}).status(), nil
}

// listLocked serves a List: consistent (resourceVersion "") from the
// watch cache once it caught up with etcd, or from etcd when it cannot; at
// any version ("0") from the cache as it is; not older than N from the
// cache once it holds N. Pages (limit) continue from the first page's
// snapshot. It may unlock the model while it waits.
func (c *Cluster) listLocked(ctx context.Context, cn *conn, srv *APIServer, r *request) (int, []byte, effect) {
	res := r.res
	if tok := r.q["continue"]; tok != "" {
		return c.continueLocked(cn, r, tok)
	}
	wc := srv.caches[res.Name]
	if wc == nil {
		return 503, (&apiError{Code: 503, Reason: "ServiceUnavailable", Message: "watch cache not ready"}).status(), nil
	}
	rvs := r.q["resourceVersion"]
	want, ok := res.parseRV(rvs)
	if !ok {
		return 400, (&apiError{Code: 400, Reason: "BadRequest", Message: "invalid resourceVersion " + rvs}).status(), nil
	}
	var snap map[string]*Write
	var rev uint64
	switch {
	case rvs == "":
		if !c.waitLocked(ctx, func() bool { return srv.up && wc.fresh(now()) }) {
			if ctx.Err() != nil || !srv.up {
				return 503, (&apiError{Code: 503, Reason: "ServiceUnavailable", Message: "timeout"}).status(), nil
			}
			// the cache did not catch up: served from etcd
			snap, rev = snapshot(res.lastWritesLocked(), r.scope()), res.etcd.rev
			break
		}
		snap, rev = snapshot(wc.last, r.scope()), wc.rv
	case want == 0:
		snap, rev = snapshot(wc.last, r.scope()), wc.rv
	default:
		if !c.waitLocked(ctx, func() bool { return srv.up && wc.rv >= want }) {
			return 504, errTooLarge.status(), nil
		}
		snap, rev = snapshot(wc.last, r.scope()), wc.rv
	}
	if r.q["fieldSelector"] != "" && r.q["limit"] == "" {
		// a read of one object by name, whole (a stale-read sample): not
		// an informer's list, whose pager always asks for a page size
		return 200, encodeList(r.res, liveObjects(snap, ""), rev, "", 0, r.meta), nil
	}
	return c.pageLocked(cn, r, page{rest: liveObjects(snap, ""), rev: rev, snap: snap, taken: now()})
}

// liveObjects returns the objects of a key → last write map that exist
// (their last write is not a delete) in namespace ("": all), by key.
func liveObjects(last map[string]*Write, namespace string) []*Object {
	out := make([]*Object, 0, len(last))
	for _, w := range last {
		if w.Type != Deleted && (namespace == "" || w.Obj.Namespace == namespace) {
			out = append(out, w.Obj)
		}
	}
	sortObjects(out)
	return out
}

func sortObjects(objs []*Object) {
	for i := 1; i < len(objs); i++ {
		for j := i; j > 0 && objs[j].Key() < objs[j-1].Key(); j-- {
			objs[j], objs[j-1] = objs[j-1], objs[j]
		}
	}
}

// page is the rest of a paged list, by continue token.
type page struct {
	rest  []*Object
	rev   uint64
	snap  map[string]*Write // what the whole list tells
	taken time.Time         // when snap was taken (the first page)
}

// pageLocked answers with the next page of p. The last page of a list
// replaces the client's view with the list's snapshot, unless it is a
// single-item read (a head probe or a freshness read, not an informer's).
func (c *Cluster) pageLocked(cn *conn, r *request, p page) (code int, body []byte, e effect) {
	limit, _ := strconv.Atoi(r.q["limit"])
	if limit <= 0 || limit >= len(p.rest) {
		if limit != 1 || r.q["continue"] != "" {
			e = listEffect(cn.host, r.res.Name, p.snap, p.rev, p.taken)
		}
		return 200, encodeList(r.res, p.rest, p.rev, "", 0, r.meta), e
	}
	c.seq++
	tok := "c" + strconv.Itoa(c.seq)
	if c.pages == nil {
		c.pages = map[string]page{}
	}
	c.pages[tok] = page{rest: p.rest[limit:], rev: p.rev, snap: p.snap, taken: p.taken}
	// as the API server: a selected list's pages do not count what is
	// left (the store cannot tell without filtering it all)
	remaining := len(p.rest) - limit
	if r.q["labelSelector"] != "" || r.q["fieldSelector"] != "" {
		remaining = -1
	}
	return 200, encodeList(r.res, p.rest[:limit], p.rev, tok, remaining, r.meta), nil
}

func (c *Cluster) continueLocked(cn *conn, r *request, tok string) (int, []byte, effect) {
	p, ok := c.pages[tok]
	if !ok {
		return 410, errExpired(0).status(), nil
	}
	delete(c.pages, tok)
	return c.pageLocked(cn, r, p)
}

// waitLocked waits, with the model unlocked, until cond holds or the
// fresh wait passes; it reports whether cond held.
func (c *Cluster) waitLocked(ctx context.Context, cond func() bool) bool {
	deadline := now().Add(c.cfg.FreshWait)
	for !cond() {
		if !now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(min(100*time.Millisecond, deadline.Sub(now()))):
		}
		c.mu.Lock()
		c.advanceLocked(now())
	}
	return true
}

var errNoCache = errors.New("no watch cache")

// watchLocked starts a watch (or a watch-list) on cn and returns its
// streaming response; it unlocks the model. The watch holds cn until its
// stream is closed.
func (c *Cluster) watchLocked(ctx context.Context, req *http.Request, cn *conn, srv *APIServer, r *request) (*http.Response, error) {
	res := r.res
	wc := srv.caches[res.Name]
	if wc == nil {
		c.releaseLocked(cn)
		c.mu.Unlock()
		return nil, errNoCache
	}
	st := c.newStreamLocked()
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.releaseLocked(cn)
	}
	t := now()
	wt := &watcher{wc: wc, conn: cn, stream: st, meta: r.meta, scope: r.scope(), bookmarks: r.q["allowWatchBookmarks"] == "true", opened: t}
	if s, err := strconv.Atoi(r.q["timeoutSeconds"]); err == nil && s > 0 {
		wt.deadline = t.Add(time.Duration(s) * time.Second)
	}
	rvs := r.q["resourceVersion"]
	from, ok := res.parseRV(rvs)
	initial := r.q["sendInitialEvents"] == "true"
	if ok && rvs == "" && srv.cut {
		// the resource version unset (a watch from "now", a watch-list):
		// the cacher asks etcd for its revision first, on a server cut off
		// etcd in vain until the release or the watch's timeout
		// (TestHAServerLosesEtcd: nothing in 75s)
		timeout := defaultWatchTimeout
		if !wt.deadline.IsZero() {
			timeout = wt.deadline.Sub(t)
		}
		if !c.awaitEtcdLocked(ctx, srv, timeout) {
			c.releaseLocked(cn)
			switch {
			case ctx.Err() != nil:
				c.mu.Unlock()
				return nil, ctx.Err()
			case !srv.up:
				c.mu.Unlock()
				return nil, errConnReset
			}
			delay := srv.latency + cn.h.latency + c.turnLocked()
			c.mu.Unlock()
			return respond(ctx, req, cn.h, delay, errTimeout.Code, errTimeout.status())
		}
		if wc = srv.caches[res.Name]; wc == nil {
			c.releaseLocked(cn)
			c.mu.Unlock()
			return nil, errNoCache
		}
		wt.wc = wc
	}
	fail := func(e *apiError) (*http.Response, error) {
		st.push(e.event(), now().Add(srv.latency+cn.h.latency), nil)
		st.finish(now().Add(srv.latency + cn.h.latency))
		st.onClose = release
		c.mu.Unlock()
		return streamResponse(req, cn.h, st), nil
	}
	switch {
	case !ok:
		return fail(&apiError{Code: 400, Reason: "BadRequest", Message: "invalid resourceVersion " + rvs})
	case initial && rvs == "":
		if !c.waitLocked(ctx, func() bool { return srv.up && srv.caches[res.Name] == wc && wc.fresh(now()) }) {
			return fail(errTooLarge)
		}
	case from > 0 && initial:
		if !c.waitLocked(ctx, func() bool { return srv.up && srv.caches[res.Name] == wc && wc.rv >= from }) {
			return fail(errTooLarge)
		}
	case from > 0 && from < wc.floor:
		return fail(errExpired(from))
		// A plain watch from a revision the cache has not reached is
		// accepted at once, as kube-apiserver's cacher accepts it: it
		// delivers nothing, bookmarks neither, until the cache passes that
		// revision (an informer resuming after etcd was restored from a
		// backup gets the new history's writes above its old RV only).
	}
	if !srv.up || srv.caches[res.Name] != wc {
		c.releaseLocked(cn)
		c.mu.Unlock()
		return nil, errConnReset
	}
	t = now()
	switch {
	case initial || from == 0:
		snap := snapshot(wc.last, r.scope())
		var extra time.Duration // a watch-list's initial state is a list
		if initial {
			extra = c.listLatencyLocked()
		}
		for _, o := range liveObjects(snap, "") {
			var e effect
			if !initial {
				e = eventEffect(cn.host, snap[o.Key()])
			}
			st.push(encodeEvent(Added, res, o, r.meta, ""), t.Add(wt.delay()+extra), e)
		}
		wt.pos = wc.rv
		if initial {
			wt.bookmark(t.Add(extra), snap)
		}
	default:
		wt.pos = from
		for _, w := range wc.window {
			wt.send(w, t)
		}
		wt.pos = max(wt.pos, from)
	}
	wt.start = wt.pos
	wc.watchers = append(wc.watchers, wt)
	cn.streams = append(cn.streams, st)
	if cn.h.frozen {
		st.setFrozen(true)
	}
	wt.scheduleBookmark(t)
	if !wt.deadline.IsZero() {
		wt.deadlineA = c.scheduleLocked(wt.deadline, func(t time.Time) { wt.end(t, nil) })
	}
	cn.readLocked(t) // the response's headers
	st.onClose = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		st.mu.Lock()
		cn.readLocked(st.lastRead)
		st.mu.Unlock()
		wt.end(now(), nil)
		cn.streams = slices.DeleteFunc(cn.streams, func(x *stream) bool { return x == st })
		c.releaseLocked(cn)
	}
	c.mu.Unlock()
	return streamResponse(req, cn.h, st), nil
}

func streamResponse(req *http.Request, h *hostConns, st *stream) *http.Response {
	return response{
		StatusCode: 200, Status: "200 OK",
		Header:        http.Header{"Content-Type": []string{"application/json"}, "Transfer-Encoding": []string{"chunked"}},
		Body:          st,
		ContentLength: -1,
		Request:       req,
	}.withProto(h)
}
