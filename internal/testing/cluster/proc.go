package cluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ContainerPID returns the host PID of the main process of a container,
// given the ID from its pod status (containerd://<id>). Its cgroup path
// ends in the ID, under kubelet's kubepods tree.
func ContainerPID(containerID string) (int, error) {
	_, id, ok := strings.Cut(containerID, "://")
	if !ok || id == "" {
		return 0, fmt.Errorf("container ID %q: want runtime://id", containerID)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	best := 0
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !bytes.Contains(cg, []byte("kubepods")) || !bytes.Contains(cg, []byte(id)) {
			continue
		}
		// the container's first process has the lowest PID of its cgroup
		if best == 0 || pid < best {
			best = pid
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no process of container %s", id)
	}
	return best, nil
}

// ProcStatus returns the fields of /proc/<pid>/status (Uid, Gid, CapEff,
// NoNewPrivs, Seccomp, VmRSS, VmHWM, ...), values with their spacing
// trimmed.
func ProcStatus(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out, nil
}

// RootReadOnly reports whether the root filesystem that process pid sees
// is mounted read-only.
func RootReadOnly(pid int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return false, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			return strings.Contains(","+f[5]+",", ",ro,"), nil
		}
	}
	return false, fmt.Errorf("process %d: no root mount in mountinfo", pid)
}

// Environ returns the environment of process pid.
func Environ(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

// MemoryCgroup returns the memory cgroup v1 directory of process pid (its
// limit_in_bytes and max_usage_in_bytes are the container's).
func MemoryCgroup(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
			return cgroupRoot + "/memory" + f[2], nil
		}
	}
	return "", fmt.Errorf("process %d: no memory cgroup (cgroup v2 host?)", pid)
}
