package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// EtcdCluster is an etcd cluster of several members on loopback, as
// production control planes run it, so that tests can change its raft
// leader: hand leadership over on demand (MoveLeader), stall the leader
// until the others vote it out (FreezeLeader), or kill the leader's process
// and let the others elect a new one (KillMember). Member 0 is the
// etcd that envtest starts and health-checks; the others are started here
// first, so that member 0 finds a quorum to join. kube-apiserver is given
// every member's client URL, as it is in a production control plane.
//
// Leadership is read and moved through etcd's own v3 API on its JSON gRPC
// gateway (the Maintenance service's Status and MoveLeader, served on
// every client URL): no etcd client library enters the module's go.mod
// and no etcdctl needs building.
type EtcdCluster struct {
	Members []*EtcdMember

	mu  sync.Mutex
	ids map[uint64]*EtcdMember // raft member IDs, learned from Status answers
}

// EtcdMember is one etcd process of an EtcdCluster.
type EtcdMember struct {
	Name      string
	ClientURL string
	PeerURL   string
	DataDir   string
	// Process is nil until the member runs; member 0 is found in /proc
	// after envtest started it.
	Process *process.Process
	log     io.Writer
	frozen  atomic.Bool // paused by FreezeLeader: it answers nothing
}

// answers reports whether m runs and is not frozen.
func (m *EtcdMember) answers() bool {
	return m.Process != nil && !m.Process.Exited() && !m.frozen.Load()
}

// Grace period of a member's stop before SIGKILL: a stopped leader first
// hands leadership over, which takes an election round-trip.
const etcdMemberGrace = 30 * time.Second

// newEtcdCluster prepares an n-member cluster whose member 0 is envtest's
// etcd: it chooses every member's ports and flags, configures envtest's etcd
// accordingly, and starts members 1…n-1 with extraArgs (in their own
// directories under dir). Call adoptFirst once envtest has started member 0.
func newEtcdCluster(etcd *envtest.Etcd, n int, extraArgs map[string]string, dir string, logs func(member string) (*os.File, error)) (*EtcdCluster, error) {
	c := &EtcdCluster{ids: map[uint64]*EtcdMember{}}
	var initial []string
	for i := range n {
		m, err := newEtcdMember(fmt.Sprintf("etcd-%d", i), logs)
		if err != nil {
			return nil, err
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}

	first := c.Members[0]
	u, err := url.Parse(first.ClientURL)
	if err != nil {
		return nil, err
	}
	etcd.URL = u
	args := etcd.Configure()
	for k, v := range first.flags(initial, extraArgs) {
		args.Set(k, v)
	}
	if first.log != nil {
		etcd.Out, etcd.Err = first.log, first.log
	}

	for _, m := range c.Members[1:] {
		m.DataDir = filepath.Join(dir, m.Name)
		if err := m.start(etcd.Path, initial, extraArgs); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// newEtcdMember chooses the ports of a member named name; logs, if not
// nil, opens its log.
func newEtcdMember(name string, logs func(member string) (*os.File, error)) (*EtcdMember, error) {
	client, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	peer, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	m := &EtcdMember{Name: name, ClientURL: "http://" + client, PeerURL: "http://" + peer}
	if logs != nil {
		f, err := logs(m.Name)
		if err != nil {
			return nil, err
		}
		m.log = f
	}
	return m, nil
}

// flags are m's etcd flags in the cluster whose members are initial
// (name=peer URL), extraArgs over them.
func (m *EtcdMember) flags(initial []string, extraArgs map[string]string) map[string]string {
	f := map[string]string{
		"name":                        m.Name,
		"listen-client-urls":          m.ClientURL,
		"advertise-client-urls":       m.ClientURL,
		"listen-peer-urls":            m.PeerURL,
		"initial-advertise-peer-urls": m.PeerURL,
		"initial-cluster":             strings.Join(initial, ","),
		"initial-cluster-state":       "new",
		"initial-cluster-token":       "rvsync-test",
		"unsafe-no-fsync":             "true",
	}
	maps.Copy(f, extraArgs)
	return f
}

// start runs m, a process of the etcd binary path, on its data directory,
// with its flags in the cluster whose members are initial.
func (m *EtcdMember) start(path string, initial []string, extraArgs map[string]string) error {
	var argv []string
	for k, v := range m.flags(initial, extraArgs) {
		argv = append(argv, "--"+k+"="+v)
	}
	argv = append(argv, "--data-dir="+m.DataDir)
	m.Process = &process.Process{Path: path, Args: argv, Log: m.log}
	return m.Process.Start()
}

// waitHealthy waits until m answers healthy: it runs and follows a leader.
func (m *EtcdMember) waitHealthy(ctx context.Context) error {
	return process.Poll(ctx, m.Name+" healthy", func(ctx context.Context) error {
		if m.Process.Exited() {
			return process.ErrExited
		}
		return process.GetOK(ctx, m.ClientURL+"/health")
	})
}

// adoptFirst finds member 0, started by envtest, in /proc so that it can
// be killed and restarted like the others.
func (c *EtcdCluster) adoptFirst(etcd *envtest.Etcd) error {
	first := c.Members[0]
	first.DataDir = etcd.DataDir
	p, err := process.FindProcess(etcd.Path, "--data-dir="+etcd.DataDir)
	if err != nil {
		return err
	}
	p.Log = first.log
	first.Process = p
	return nil
}

// Endpoints is every member's client URL, comma-separated, as
// kube-apiserver's --etcd-servers takes them.
func (c *EtcdCluster) Endpoints() string {
	var urls []string
	for _, m := range c.Members {
		urls = append(urls, m.ClientURL)
	}
	return strings.Join(urls, ",")
}

// Stop stops every member that runs. Member 0 is stopped here too: if it was
// restarted it is no longer envtest's child, and envtest's own stop finds an
// ended process either way.
func (c *EtcdCluster) Stop() error {
	var errs []error
	for _, m := range c.Members {
		if m.Process != nil {
			errs = append(errs, m.Process.Stop(etcdMemberGrace))
		}
	}
	return errors.Join(errs...)
}

// MemberStatus is what one member says of itself and of the cluster.
type MemberStatus struct {
	Member *EtcdMember
	// ID is the member's raft ID.
	ID uint64
	// Leader is the raft ID of the member it follows (its own ID when it
	// leads), 0 while it knows of no leader.
	Leader uint64
	// RaftTerm counts elections: every leader change raises it.
	RaftTerm uint64
}

// statusResponse is the part of the Maintenance service's StatusResponse
// the tests read. The gateway writes uint64 fields as JSON strings and
// uses the proto field names.
type statusResponse struct {
	Header struct {
		MemberID uint64 `json:"member_id,string"`
	} `json:"header"`
	Leader   uint64 `json:"leader,string"`
	RaftTerm uint64 `json:"raftTerm,string"`
}

// Status asks member m for its status.
func (c *EtcdCluster) Status(ctx context.Context, m *EtcdMember) (MemberStatus, error) {
	var resp statusResponse
	if err := gatewayCall(ctx, m, "/v3/maintenance/status", struct{}{}, &resp); err != nil {
		return MemberStatus{}, err
	}
	c.mu.Lock()
	c.ids[resp.Header.MemberID] = m
	c.mu.Unlock()
	return MemberStatus{Member: m, ID: resp.Header.MemberID, Leader: resp.Leader, RaftTerm: resp.RaftTerm}, nil
}

// Leader returns the member that every running member follows, and the
// raft term of its leadership; it fails while members disagree or one
// knows no leader (an election is under way).
func (c *EtcdCluster) Leader(ctx context.Context) (*EtcdMember, uint64, error) {
	var leader, term uint64
	for _, m := range c.running() {
		st, err := c.Status(ctx, m)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", m.Name, err)
		}
		switch {
		case st.Leader == 0:
			return nil, 0, fmt.Errorf("%s knows no leader", m.Name)
		case leader != 0 && (st.Leader != leader || st.RaftTerm != term):
			return nil, 0, fmt.Errorf("members disagree on the leader (%x in term %d, %x in term %d)", leader, term, st.Leader, st.RaftTerm)
		}
		leader, term = st.Leader, st.RaftTerm
	}
	c.mu.Lock()
	m, ok := c.ids[leader]
	c.mu.Unlock()
	if !ok || !m.answers() {
		// the followers of a killed or frozen leader trust it until their election timeout
		return nil, 0, fmt.Errorf("leader %x is no running member", leader)
	}
	return m, term, nil
}

// WaitLeader waits until the running members agree on a leader.
func (c *EtcdCluster) WaitLeader(ctx context.Context) (*EtcdMember, uint64, error) {
	var m *EtcdMember
	var term uint64
	err := process.Poll(ctx, "an etcd leader all members agree on", func(ctx context.Context) error {
		var err error
		m, term, err = c.Leader(ctx)
		return err
	})
	return m, term, err
}

// MoveLeader hands the leadership from the current leader to the next
// running member, as `etcdctl move-leader` does, and waits until every
// running member follows the new leader. It returns the old and new leader
// and the new leader's term.
func (c *EtcdCluster) MoveLeader(ctx context.Context) (from, to *EtcdMember, term uint64, err error) {
	from, _, err = c.WaitLeader(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	to = c.next(from)
	if to == nil {
		return nil, nil, 0, errors.New("no other running member to lead")
	}
	target, err := c.Status(ctx, to)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", to.Name, err)
	}
	// MoveLeader answers once the target leads (or the transfer failed).
	req := struct {
		TargetID uint64 `json:"targetID,string"`
	}{target.ID}
	if err := gatewayCall(ctx, from, "/v3/maintenance/transfer-leadership", req, &struct{}{}); err != nil {
		return nil, nil, 0, fmt.Errorf("move leader %s → %s: %w", from.Name, to.Name, err)
	}
	err = process.Poll(ctx, "every member following "+to.Name, func(ctx context.Context) error {
		leader, t, err := c.Leader(ctx)
		if err == nil && leader != to {
			err = fmt.Errorf("%s leads", leader.Name)
		}
		term = t
		return err
	})
	return from, to, term, err
}

// FreezeLeader freezes the leader (SIGSTOP) until the other members have
// elected a new leader among themselves, then lets it run on: it sees the
// higher term and follows. This is how leadership flaps in production: a
// leader that misses heartbeats for longer than the election timeout
// (CPU starvation, a stalled disk, a long pause) is voted out, unlike
// MoveLeader's orderly hand-over. Requests the API server sent to the
// frozen member wait meanwhile. It returns the old and new leader, the new
// term and how long the old leader was frozen.
func (c *EtcdCluster) FreezeLeader(ctx context.Context) (from, to *EtcdMember, term uint64, frozen time.Duration, err error) {
	from, old, err := c.WaitLeader(ctx)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if err := from.Process.Pause(); err != nil {
		return nil, nil, 0, 0, err
	}
	start := time.Now()
	from.frozen.Store(true)
	err = process.Poll(ctx, "a new leader elected while "+from.Name+" is frozen", func(ctx context.Context) error {
		var err error
		to, term, err = c.Leader(ctx)
		if err == nil && term <= old {
			err = fmt.Errorf("%s still leads in term %d", to.Name, term)
		}
		return err
	})
	from.frozen.Store(false)
	frozen = time.Since(start)
	if rerr := from.Process.Resume(); rerr != nil {
		return nil, nil, 0, 0, errors.Join(err, rerr)
	}
	if err != nil {
		return nil, nil, 0, 0, err
	}
	to, term, err = c.WaitLeader(ctx) // the old leader follows again
	return from, to, term, frozen, err
}

// KillMember kills m (SIGKILL): it vanishes without handing over its
// leadership, as a crashed or powered-off node does, so the others must
// detect the loss (election timeout) and elect a new leader. SIGTERM would
// not do: a stopping etcd leader first transfers its leadership.
func (c *EtcdCluster) KillMember(m *EtcdMember) error { return m.Process.Kill() }

// RestartMember starts a stopped member again on its data and ports and
// waits until it is healthy (it follows a leader) and every running member
// agrees on the leader.
func (c *EtcdCluster) RestartMember(ctx context.Context, m *EtcdMember) error {
	if err := m.Process.Start(); err != nil {
		return err
	}
	if err := m.waitHealthy(ctx); err != nil {
		return err
	}
	_, _, err := c.WaitLeader(ctx)
	return err
}

// running returns the members that answer.
func (c *EtcdCluster) running() []*EtcdMember {
	var out []*EtcdMember
	for _, m := range c.Members {
		if m.answers() {
			out = append(out, m)
		}
	}
	return out
}

// next returns the running member after m in member order, round-robin.
func (c *EtcdCluster) next(m *EtcdMember) *EtcdMember {
	at := slices.Index(c.Members, m)
	for i := range c.Members {
		cand := c.Members[(at+1+i)%len(c.Members)]
		if cand != m && cand.answers() {
			return cand
		}
	}
	return nil
}

// gatewayCall POSTs req as JSON to path on m's gRPC gateway and decodes
// the answer into resp. A gRPC error comes back as a non-200 status with
// a JSON body naming it.
func gatewayCall(ctx context.Context, m *EtcdMember, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, m.ClientURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s%s: %s: %s", m.ClientURL, path, res.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, resp)
}
