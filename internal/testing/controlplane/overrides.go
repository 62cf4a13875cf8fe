package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// overrideEtcdName names the etcd of Options.EtcdOverrides: its member
// name, its data directory under the start's own and its log.
const overrideEtcdName = "etcd-overrides"

// overrideEtcdTimeout bounds the start of the etcd of EtcdOverrides and
// the writes that bring it to OverrideEtcdRevision: seconds on a loaded
// 2-core machine.
const overrideEtcdTimeout = 2 * time.Minute

// overridesFlag is kube-apiserver's --etcd-servers-overrides for resources
// (each "group/resource", the core group empty) all on the etcd at url.
func overridesFlag(resources []string, url string) (string, error) {
	var out []string
	for _, r := range resources {
		if !strings.Contains(r, "/") || strings.Contains(r, "#") {
			return "", fmt.Errorf("EtcdOverrides: %q: want group/resource, the core group empty (/events)", r)
		}
		out = append(out, r+"#"+url)
	}
	return strings.Join(out, ","), nil
}

// startOverrideEtcd starts the single-member etcd of Options.EtcdOverrides
// with extraArgs, its data in the start's own directory (so a failed
// start's sweep finds it, and Stop removes it), brings its revision to
// revision, and returns kube-apiserver's --etcd-servers-overrides for
// resources on it.
func (e *Env) startOverrideEtcd(path string, resources []string, extraArgs map[string]string, revision int64, logDir string) (string, error) {
	m, err := newEtcdMember(overrideEtcdName, func(member string) (*os.File, error) { return e.logFile(logDir, member) })
	if err != nil {
		return "", err
	}
	flag, err := overridesFlag(resources, m.ClientURL)
	if err != nil {
		return "", err
	}
	m.DataDir = filepath.Join(e.dir, m.Name)
	e.OverrideEtcd = m
	// a failure here is worth a start on new ports, as one of envtest's
	started := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%w: %s: %w; its last output:\n%s", errStart, m.Name, err, process.Tail(filepath.Join(logDir, m.Name+".log"), 8))
	}
	if err := m.start(path, []string{m.Name + "=" + m.PeerURL}, extraArgs); err != nil {
		return "", started(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), overrideEtcdTimeout)
	defer cancel()
	if err := m.waitHealthy(ctx); err != nil {
		return "", started(err)
	}
	if revision > 0 {
		err = m.writeUntil(ctx, revision)
	}
	return flag, started(err)
}

// kvResponse is the part of the KV service's PutResponse the rig reads:
// the store's revision after the write.
type kvResponse struct {
	Header struct {
		Revision int64 `json:"revision,string"`
	} `json:"header"`
}

// revisionWriters write concurrently, so that a round trip through the
// gateway does not cap the rate: 5,000 revisions took 1.2-1.7 s on a
// loaded 2-core machine.
const revisionWriters = 8

// writeUntil writes one key over and over until m's revision is at least
// revision: each write is one revision, and a key beside the API server's
// /registry prefix is unseen by it.
func (m *EtcdMember) writeUntil(ctx context.Context, revision int64) error {
	req := struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
	}{[]byte("rvsync-test/revision"), []byte("x")}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, revisionWriters)
	for w := range revisionWriters {
		wg.Go(func() {
			for !done.Load() {
				var resp kvResponse
				if err := gatewayCall(ctx, m, "/v3/kv/put", req, &resp); err != nil {
					errs[w] = fmt.Errorf("bring %s to revision %d: %w", m.Name, revision, err)
					done.Store(true)
					return
				}
				if resp.Header.Revision >= revision {
					done.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
