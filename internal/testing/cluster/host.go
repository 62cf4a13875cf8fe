package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
)

// Host paths that kubelet, containerd and the CNI plugins write to whatever
// they are configured with. One that did not exist before the cluster
// started is removed with everything under it (after unmounting) when it
// stops.
var fixedPaths = []string{
	"/var/lib/kubelet", // device-plugins/ is a fixed path in kubelet
	"/var/lib/cni",     // libcni's result cache, used by containerd's CNI client
	"/run/containerd",  // containerd's shim sockets (run/containerd/s)
	"/var/run/netns",
	"/var/log/pods",
	"/var/log/containers", // kubelet's symlinks to container logs
	"/etc/cni",
	"/opt/cni",
	"/usr/libexec/kubernetes", // kubelet's default volume plugin dir
	"/var/lib/containerd",
	"/etc/kubernetes",
}

// Kernel settings the components change: the bridge plugin turns on IP
// forwarding for its gateway; kubelet (protectKernelDefaults false) sets
// the vm, kernel and keys ones; kube-proxy may set route_localnet and the
// conntrack table size. Each is put back when the cluster stops.
var sysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv6/conf/all/forwarding",
	"net/ipv4/conf/all/route_localnet",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// cgroupRoot holds a mount per cgroup v1 hierarchy (and the v2 one); kubelet
// makes a kubepods tree in each.
const cgroupRoot = "/sys/fs/cgroup"

// hostState is what a cluster changes on the host, read before it starts
// and compared after it stops. It is stored in the state file, so a later
// start can undo a cluster whose process died.
type hostState struct {
	Paths    map[string]bool   `json:"paths"`    // fixed path → existed
	Sysctls  map[string]string `json:"sysctls"`  // /proc/sys path → value (absent: not on this kernel)
	Links    []string          `json:"links"`    // network interfaces
	Mounts   []string          `json:"mounts"`   // mount points
	Cgroups  []string          `json:"cgroups"`  // kubepods directories
	IPTables map[string]string `json:"iptables"` // iptables-save / ip6tables-save, counters and comments removed
	NFTables []string          `json:"nftables"` // nftables tables ("ip nat"), iptables-nft's included
}

func readHost() (hostState, error) {
	s := hostState{Paths: map[string]bool{}, Sysctls: map[string]string{}, IPTables: map[string]string{}}
	for _, p := range fixedPaths {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	for _, k := range sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			s.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return s, err
	}
	for _, i := range ifs {
		s.Links = append(s.Links, i.Name)
	}
	if s.Mounts, err = mountPoints(); err != nil {
		return s, err
	}
	s.Cgroups = kubepodsCgroups()
	for _, cmd := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command(cmd + "-save").Output()
		if err != nil {
			return s, fmt.Errorf("%s-save: %w", cmd, err)
		}
		s.IPTables[cmd] = normalizeSave(out)
	}
	if s.NFTables, err = nftTables(); err != nil {
		return s, err
	}
	sort.Strings(s.Links)
	return s, nil
}

// nftTables lists the nftables tables as "family name". iptables-nft makes
// one per table it touches and leaves it behind empty, so a table that was
// not there before is removed with the cluster.
func nftTables() ([]string, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, nil // iptables-legacy host: nothing to list
	}
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil, fmt.Errorf("nft list tables: %w", err)
	}
	var tables []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "table "); ok {
			tables = append(tables, t)
		}
	}
	sort.Strings(tables)
	return tables, nil
}

// mountPoints lists the mount points of the host's mount namespace.
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			out = append(out, unescapeMount(f[4]))
		}
	}
	sort.Strings(out)
	return out, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kubepodsCgroups lists kubelet's top-level cgroups in every hierarchy.
func kubepodsCgroups() []string {
	var out []string
	hiers, _ := os.ReadDir(cgroupRoot)
	for _, h := range hiers {
		for _, name := range []string{"kubepods", "kubepods.slice"} {
			p := filepath.Join(cgroupRoot, h.Name(), name)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				out = append(out, p)
			}
		}
	}
	return out
}

// normalizeSave drops what changes without a rule changing: comments
// (with timestamps), packet counters, and tables holding nothing but
// built-in chains that accept (iptables-nft lists a table that some
// command merely looked at).
func normalizeSave(out []byte) string {
	var lines, table []string
	empty := true
	for line := range strings.SplitSeq(string(out), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "*"):
			table, empty = nil, true
		case strings.HasPrefix(line, ":"):
			if i := strings.LastIndex(line, " ["); i > 0 {
				line = line[:i]
			}
			if !strings.HasSuffix(line, " ACCEPT") {
				empty = false
			}
		case line == "COMMIT":
			if !empty {
				lines = append(lines, append(table, line)...)
			}
			continue
		default:
			empty = false
		}
		table = append(table, line)
	}
	return strings.Join(lines, "\n")
}

// restore undoes what the cluster changed relative to before: it kills the
// pods' and shims' processes left running, unmounts and removes what it
// created, deletes the bridge, the iptables rules and chains, the kubepods
// cgroups, and puts kernel settings back. It runs after a clean stop as
// after a crash, so it does what it can and reports every failure.
func (before hostState) restore(st *state) error {
	var errs []error
	errs = append(errs, killStray(st)...)
	// unmount deepest first: container rootfs and volumes, then the
	// bind mounts kubelet puts on its own directories
	roots := []string{st.Dir}
	for p, existed := range before.Paths {
		if !existed {
			roots = append(roots, p)
		}
	}
	if err := unmountUnder(roots); err != nil {
		errs = append(errs, err)
	}
	if _, err := net.InterfaceByName(st.Bridge); err == nil && !slices.Contains(before.Links, st.Bridge) {
		if out, err := exec.Command("ip", "link", "delete", st.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %v: %s", st.Bridge, err, out))
		}
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		if err := undoIPTables(cmd, before.IPTables[cmd]); err != nil {
			errs = append(errs, err)
		}
	}
	if tables, err := nftTables(); err != nil {
		errs = append(errs, err)
	} else {
		for _, t := range tables {
			if !slices.Contains(before.NFTables, t) {
				if out, err := exec.Command("nft", append([]string{"delete", "table"}, strings.Fields(t)...)...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", t, err, out))
				}
			}
		}
	}
	now := readSysctls()
	for k, v := range before.Sysctls {
		if now[k] != v {
			if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", k, v, err))
			}
		}
	}
	for _, cg := range kubepodsCgroups() {
		if !slices.Contains(before.Cgroups, cg) {
			if err := removeCgroup(cg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for p, existed := range before.Paths {
		if !existed {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func readSysctls() map[string]string {
	out := map[string]string{}
	for _, k := range sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// diff names every difference between the host before the cluster and
// now: what teardown failed to undo.
func (before hostState) diff(now hostState) []string {
	var out []string
	for p, existed := range before.Paths {
		if now.Paths[p] != existed {
			out = append(out, fmt.Sprintf("path %s: existed %v before, %v now", p, existed, now.Paths[p]))
		}
	}
	for k, v := range before.Sysctls {
		if now.Sysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s: %s before, %s now", k, v, now.Sysctls[k]))
		}
	}
	out = append(out, added("network interface ", before.Links, now.Links)...)
	out = append(out, added("mount ", before.Mounts, now.Mounts)...)
	out = append(out, added("cgroup ", before.Cgroups, now.Cgroups)...)
	out = append(out, added("nftables table ", before.NFTables, now.NFTables)...)
	for cmd, save := range before.IPTables {
		if now.IPTables[cmd] != save {
			out = append(out, fmt.Sprintf("%s rules differ:\n%s", cmd, process.LineDiff(save, now.IPTables[cmd])))
		}
	}
	sort.Strings(out)
	return out
}

// added names, with prefix, each of now not in before.
func added(prefix string, before, now []string) []string {
	var out []string
	for _, v := range now {
		if !slices.Contains(before, v) {
			out = append(out, prefix+v)
		}
	}
	return out
}

// killStray kills what outlives a stopped (or crashed) cluster: its own
// components still running, containerd's shims of its socket, and every
// process in a kubepods cgroup (pods' containers).
func killStray(st *state) []error {
	var errs []error
	pids := map[int]bool{}
	for _, p := range st.Processes {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID)); err == nil && exe == p.Path {
			pids[p.PID] = true
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmdline, []byte("containerd-shim")) && bytes.Contains(cmdline, []byte(st.Socket)) {
			pids[pid] = true
		}
	}
	for _, cg := range kubepodsCgroups() {
		_ = filepath.WalkDir(cg, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for f := range strings.FieldsSeq(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids[pid] = true
					}
				}
			}
			return nil
		})
	}
	for pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("process %d survived SIGKILL", pid))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return errs
}

// alive reports whether pid runs (a zombie has ended: its parent reaps it).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// unmountUnder detaches every mount at or below one of roots, deepest
// first.
func unmountUnder(roots []string) error {
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		for _, r := range roots {
			if r != "" && (m == r || strings.HasPrefix(m, r+"/")) {
				under = append(under, m)
				break
			}
		}
	}
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	var errs []error
	for _, m := range under {
		// a path mounted twice (kubelet's bind mount on its root) needs
		// one unmount per mount
		for range 10 {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup tree bottom-up (rmdir only: a cgroup's
// files cannot be deleted).
func removeCgroup(root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		// a cgroup whose last process just died is busy for a moment
		var err error
		for range 50 {
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// undoIPTables deletes the rules and chains that were not in the saved
// state before (cmd is iptables or ip6tables), in one iptables-restore
// transaction per table that leaves every other rule alone.
func undoIPTables(cmd, before string) error {
	out, err := exec.Command(cmd + "-save").Output()
	if err != nil {
		return fmt.Errorf("%s-save: %w", cmd, err)
	}
	script := undoScript(parseSave(before), parseSave(normalizeSave(out)))
	if script == "" {
		return nil
	}
	c := exec.Command(cmd+"-restore", "--noflush", "--wait")
	c.Stdin = strings.NewReader(script)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s-restore: %v: %s\n%s", cmd, err, out, script)
	}
	return nil
}

// saveTable is one table of an iptables-save: its user-defined chains and
// its rules (each "-A CHAIN spec", in order). Built-in chains (declared
// with a policy, not "-") can be neither flushed away nor deleted, so they
// are not listed: their added rules are deleted one by one.
type saveTable struct {
	chains []string
	rules  []string
}

func parseSave(save string) map[string]*saveTable {
	tables := map[string]*saveTable{}
	var cur *saveTable
	for line := range strings.SplitSeq(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			cur = &saveTable{}
			tables[line[1:]] = cur
		case cur == nil:
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 1 && f[1] == "-" {
				cur.chains = append(cur.chains, f[0])
			}
		case strings.HasPrefix(line, "-A "):
			cur.rules = append(cur.rules, line)
		}
	}
	return tables
}

// undoScript is the iptables-restore input that turns the tables of now
// back into those of before: new rules in old chains are deleted, new
// chains flushed, then deleted (nothing refers to them any more).
func undoScript(before, now map[string]*saveTable) string {
	var b strings.Builder
	names := make([]string, 0, len(now))
	for name := range now {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t, old := now[name], before[name]
		if old == nil {
			old = &saveTable{}
		}
		var newChains []string
		for _, c := range t.chains {
			if !slices.Contains(old.chains, c) {
				newChains = append(newChains, c)
			}
		}
		// count-aware: a rule present twice now and once before is deleted once
		have := map[string]int{}
		for _, r := range old.rules {
			have[r]++
		}
		var lines []string
		for _, r := range t.rules {
			if have[r] > 0 {
				have[r]--
				continue
			}
			chain := strings.Fields(r)[1]
			if !slices.Contains(newChains, chain) {
				lines = append(lines, "-D"+strings.TrimPrefix(r, "-A"))
			}
		}
		for _, c := range newChains {
			lines = append(lines, "-F "+c)
		}
		for _, c := range newChains {
			lines = append(lines, "-X "+c)
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "*%s\n%s\nCOMMIT\n", name, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}
