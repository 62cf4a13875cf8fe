package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Where the one cluster of this machine is registered. The lock is held
// while a cluster runs (fixed paths, the kubepods cgroups, iptables chain
// names and containerd's shim directory cannot be shared); the state file
// outlives a process that died without stopping its cluster, so the next
// Start undoes what it left behind.
const (
	lockFile  = "/tmp/rvsync-cluster.lock"
	stateFile = "/tmp/rvsync-cluster.state.json"
)

// state is what a teardown needs to know about a cluster, written before
// any part of it starts.
type state struct {
	Dir       string         `json:"dir"`       // everything the cluster writes of its own
	Socket    string         `json:"socket"`    // containerd's socket
	Bridge    string         `json:"bridge"`    // the CNI bridge
	Before    hostState      `json:"before"`    // the host before the cluster started
	Processes []stateProcess `json:"processes"` // components started, to kill after a crash
}

type stateProcess struct {
	Path string `json:"path"`
	PID  int    `json:"pid"`
}

func (s *state) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(stateFile+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(stateFile+".tmp", stateFile)
}

func loadState() (*state, error) {
	b, err := os.ReadFile(stateFile)
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", stateFile, err)
	}
	return &s, nil
}

// recoverCrashed undoes a cluster whose process died without stopping it,
// as recorded in the state file; the caller holds the lock.
func recoverCrashed(logf func(string, ...any)) error {
	st, err := loadState()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	logf("a cluster in %s was not stopped (its process died): undoing it", st.Dir)
	if err := st.Before.restore(st); err != nil {
		return fmt.Errorf("undo the cluster left in %s: %w", st.Dir, err)
	}
	if err := os.RemoveAll(st.Dir); err != nil {
		return err
	}
	return os.Remove(stateFile)
}
