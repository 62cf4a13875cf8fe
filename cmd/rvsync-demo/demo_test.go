package main

import (
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

func TestParseFault(t *testing.T) {
	good := []struct {
		in   string
		want faultSpec
	}{
		{"stall@30s+page", faultSpec{kind: faultStall, after: 30 * time.Second, untilPage: true}},
		{"stall@0s", faultSpec{kind: faultStall}},
		{"slow@1m+2m", faultSpec{kind: faultSlow, delay: defaultSlowDelay, after: time.Minute, length: 2 * time.Minute}},
		{"slow=500ms@10s", faultSpec{kind: faultSlow, delay: 500 * time.Millisecond, after: 10 * time.Second}},
		{"restart@5m", faultSpec{kind: faultRestart, after: 5 * time.Minute}},
	}
	for _, tt := range good {
		got, err := parseFault(tt.in)
		if err != nil {
			t.Errorf("parseFault(%q): %v", tt.in, err)
		} else if got != tt.want {
			t.Errorf("parseFault(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	bad := map[string]string{
		"stall":            "no @AFTER",
		"stall=1s@1m":      "only slow takes =DELAY",
		"crash@1m":         `unknown fault "crash"`,
		"restart@1m+1m":    "a restart has no length",
		"slow=-1s@1m":      `delay "-1s" is not a positive duration`,
		"slow=fast@1m":     `delay "fast" is not a positive duration`,
		"stall@-1m":        `start "-1m" is not a duration`,
		"stall@soon":       `start "soon" is not a duration`,
		"stall@1m+forever": `length "forever" is neither a positive duration nor page`,
		"stall@1m+0s":      `length "0s" is neither`,
	}
	for in, want := range bad {
		_, err := parseFault(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "e.g. stall@30s+page") {
			t.Errorf("parseFault(%q) = %v, want an error saying %q and the syntax", in, err, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--fault", "stall@30s+page", "--fault", "restart@8m", "--listen-address", "127.0.0.1:0", "--prometheus-address", "127.0.0.1:0", "--alertmanager-address", "127.0.0.1:0"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.faults) != 2 || o.faults[1].kind != faultRestart {
		t.Errorf("faults %+v, want a stall and a restart", o.faults)
	}
	for _, a := range []string{o.exporterAddr, o.prometheusAddr, o.alertmanagerAdr} {
		if strings.HasSuffix(a, ":0") {
			t.Errorf("port 0 not replaced by a free port: %s", a)
		}
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	bad := map[string][]string{
		"--every 0s: want a positive duration":           {"--every", "0s"},
		"--duration -1s: want 0":                         {"--duration", "-1s"},
		"--rate 0: want a positive number":               {"--rate", "0"},
		`unknown fault "x"`:                              {"--fault", "x@1m"},
		`--prometheus-address "9090": want host:port`:    {"--prometheus-address", "9090"},
		"--alertmanager-address " + busy.Addr().String(): {"--alertmanager-address", busy.Addr().String()},
		`unexpected argument "now"`:                      {"now"},
		"flag provided but not defined: -colour":         {"--colour"},
	}
	for want, args := range bad {
		_, err := parseFlags(args, os.Stderr)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseFlags(%q) = %v, want one line with %q", args, err, want)
		}
	}
}

// TestListenAddrReplacesABusyDefault: a default address in use is
// replaced by a free one, with a note; an explicit one is an error.
func TestListenAddrReplacesABusyDefault(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr, note, err := listenAddr("prometheus-address", busy.Addr().String(), false)
	if err != nil || addr == busy.Addr().String() || !strings.Contains(note, "is in use: using "+addr) {
		t.Errorf("listenAddr(busy default) = %q, %q, %v; want another address and a note", addr, note, err)
	}
	if _, _, err := listenAddr("prometheus-address", busy.Addr().String(), true); err == nil {
		t.Error("listenAddr(busy, explicit) = nil error")
	}
}

func alert(status, name, resource string, starts time.Time) notifiedAlert {
	return notifiedAlert{Status: status, Labels: map[string]string{"alertname": name, "resource": resource},
		StartsAt: starts, Fingerprint: name + "/" + resource}
}

// TestReceiverReportsEachAlertOnce: Alertmanager repeats a group's whole
// state every group interval; the receiver reports each alert's firing and
// resolution once, counts pages, and wakes nextPage at a new page only.
func TestReceiverReportsEachAlertOnce(t *testing.T) {
	var got []arrival
	r := &receiver{seen: map[string]bool{}, next: make(chan struct{})}
	r.report = func(a arrival) {
		select {
		case <-r.next:
			t.Error("nextPage woken before the page was reported")
		default:
		}
		got = append(got, a)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stalledNS := alert("firing", "RvsyncWatchStalled", "namespaces", t0)
	stalledCM := alert("firing", "RvsyncWatchStalled", "configmaps", t0.Add(time.Minute))
	resolvedNS := stalledNS
	resolvedNS.Status = "resolved"
	ticket := alert("firing", "RvsyncCanaryLost", "configmaps", t0)

	woken := r.nextPage()
	r.handle(notification{Receiver: receiverPage, Alerts: []notifiedAlert{stalledNS}}, t0)
	select {
	case <-woken:
	default:
		t.Error("nextPage not woken by a page")
	}
	woken = r.nextPage()
	r.handle(notification{Receiver: receiverPage, Alerts: []notifiedAlert{stalledNS}}, t0) // repeated: nothing new
	r.handle(notification{Receiver: receiverPage, Alerts: []notifiedAlert{stalledNS, stalledCM}}, t0)
	r.handle(notification{Receiver: receiverPage, Alerts: []notifiedAlert{resolvedNS, stalledCM}}, t0)
	woken2 := r.nextPage()
	r.handle(notification{Receiver: receiverTicket, Alerts: []notifiedAlert{ticket}}, t0)
	select {
	case <-woken2:
		t.Error("nextPage woken by a ticket")
	default:
	}
	want := []arrival{
		{at: t0, receiver: receiverPage, firing: []string{"RvsyncWatchStalled/namespaces"}},
		{at: t0, receiver: receiverPage, firing: []string{"RvsyncWatchStalled/configmaps"}},
		{at: t0, receiver: receiverPage, resolved: []string{"RvsyncWatchStalled/namespaces"}},
		{at: t0, receiver: receiverTicket, firing: []string{"RvsyncCanaryLost/configmaps"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported %+v\nwant %+v", got, want)
	}
	if fired, res := r.counts(); fired != 2 || res != 1 {
		t.Errorf("counts() = %d fired, %d resolved; want 2, 1", fired, res)
	}
	select {
	case <-woken:
	default:
		t.Error("nextPage not woken by the second page")
	}
}

func TestDescribeTimesFromTheFault(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stall := episode{kind: faultStall, start: t0, end: t0.Add(5*time.Minute + 41*time.Second)}
	latest := func(at time.Time) (episode, bool) { return stall, !at.Before(t0) }
	got := describe(arrival{at: stall.end, receiver: receiverPage, firing: []string{"RvsyncWatchStalled/configmaps", "RvsyncWatchStalled/namespaces"}}, latest)
	want := []string{"PAGE firing: RvsyncWatchStalled/configmaps, RvsyncWatchStalled/namespaces — 5m41s after the stall began"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("firing: %q, want %q", got, want)
	}
	got = describe(arrival{at: stall.end.Add(14 * time.Second), receiver: receiverPage, resolved: []string{"RvsyncWatchStalled/configmaps"}}, latest)
	want = []string{"PAGE resolved: RvsyncWatchStalled/configmaps — 14s after the stall ended"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolved: %q, want %q", got, want)
	}
	got = describe(arrival{at: t0.Add(-time.Second), receiver: receiverTicket, firing: []string{"RvsyncCanaryLost/configmaps"}}, latest)
	want = []string{"TICKET firing: RvsyncCanaryLost/configmaps"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("before any fault: %q, want %q", got, want)
	}
}

// metricsText parses an exposition.
func metricsText(t *testing.T, text string) testenv.Metrics {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// deliveryHistogram is the event delivery lag histogram of configmaps
// with `fast` observations at <= 5 ms and `slow` in (2.5 s, 5 s].
func deliveryHistogram(fast, slow int) string {
	var b strings.Builder
	b.WriteString("# TYPE rvsync_event_delivery_lag_seconds histogram\n")
	for _, le := range []string{"0.005", "2.5", "5", "+Inf"} {
		n := fast
		if le == "5" || le == "+Inf" {
			n += slow
		}
		b.WriteString(`rvsync_event_delivery_lag_seconds_bucket{resource="configmaps",le="` + le + `"} ` + strconv.Itoa(n) + "\n")
	}
	b.WriteString(`rvsync_event_delivery_lag_seconds_sum{resource="configmaps"} 1` + "\n")
	b.WriteString(`rvsync_event_delivery_lag_seconds_count{resource="configmaps"} ` + strconv.Itoa(fast+slow) + "\n")
	return b.String()
}

const signalsText = `# TYPE rvsync_informer_synced gauge
rvsync_informer_synced{resource="configmaps"} 1
rvsync_informer_synced{resource="namespaces"} 0
# TYPE rvsync_resource_version_lag gauge
rvsync_resource_version_lag{resource="configmaps"} 1234
# TYPE rvsync_cache_staleness_seconds gauge
rvsync_cache_staleness_seconds{resource="configmaps"} 187.25
# TYPE rvsync_watch_silence_seconds gauge
rvsync_watch_silence_seconds{resource="configmaps"} 190.5
# TYPE rvsync_resource_state gauge
rvsync_resource_state{resource="configmaps",state="ok"} 1
rvsync_resource_state{resource="configmaps",state="head_unknown"} 0
rvsync_resource_state{resource="namespaces",state="ok"} 0
rvsync_resource_state{resource="namespaces",state="head_unknown"} 1
# TYPE rvsync_relists_total counter
rvsync_relists_total{resource="configmaps",reason="initial"} 1
rvsync_relists_total{resource="configmaps",reason="expired"} 2
`

// TestTable: the row of a resource shows its signals, the delivery lag
// quantile over the window (the observations since the base scrape, not
// since the start), its alerts and a state other than ok; a resource
// without data shows dashes.
func TestTable(t *testing.T) {
	base := metricsText(t, signalsText+deliveryHistogram(100, 0))
	cur := metricsText(t, signalsText+deliveryHistogram(100, 10))
	var b strings.Builder
	printTable(&b, tableView{
		resources: []string{"configmaps", "namespaces"},
		cur:       cur, base: base,
		alerts: map[string][]alertState{
			"configmaps": {{name: "WatchStalled", state: "firing"}},
			"":           {{name: "ExporterDown", state: "pending"}},
		},
	})
	rows := map[string][]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	// 10 observations in (2.5, 5]: p99 at rank 9.9 of 10 → 2.5 + 2.5 × 0.99
	want := []string{"configmaps", "yes", "1234", "187.2", "190.5", "4.975", "-", "3", "WatchStalled", "firing"}
	if got := rows["configmaps"]; !reflect.DeepEqual(got, want) {
		t.Errorf("configmaps row %q, want %q\n%s", got, want, b.String())
	}
	want = []string{"namespaces", "no", "-", "-", "-", "-", "-", "0", "[head_unknown]"}
	if got := rows["namespaces"]; !reflect.DeepEqual(got, want) {
		t.Errorf("namespaces row %q, want %q\n%s", got, want, b.String())
	}
	if !strings.Contains(b.String(), "exporter alerts: ExporterDown pending") {
		t.Errorf("no line for the exporter's alerts:\n%s", b.String())
	}

	// without a base, the quantile covers every observation:
	// rank 108.9 of 110, 8.9 of the 10 in (2.5, 5] → 2.5 + 2.5 × 0.89
	b.Reset()
	printTable(&b, tableView{resources: []string{"configmaps"}, cur: cur})
	if f := strings.Fields(strings.Split(b.String(), "\n")[1]); len(f) != 9 || f[5] != "4.725" || f[8] != "-" {
		t.Errorf("without a base or alerts: %q, want p99 4.725 and no alert (-)", f)
	}
}

// TestScrapesWindow: the base is the newest scrape at least the window
// older than the latest.
func TestScrapesWindow(t *testing.T) {
	var s scrapes
	t0 := time.Now()
	ms := map[int]testenv.Metrics{}
	for _, sec := range []int{0, 10, 20, 35, 45, 50} {
		ms[sec] = testenv.Metrics{"at" + strconv.Itoa(sec): nil}
	}
	want := map[int]int{0: -1, 10: -1, 20: -1, 35: 0, 45: 10, 50: 20}
	for _, sec := range []int{0, 10, 20, 35, 45, 50} {
		base := s.add(t0.Add(time.Duration(sec)*time.Second), ms[sec])
		switch w := want[sec]; {
		case w < 0 && base != nil:
			t.Errorf("at %ds: a base before the window has passed", sec)
		case w >= 0 && !reflect.DeepEqual(base, ms[w]):
			t.Errorf("at %ds: base %v, want the scrape at %ds", sec, base, w)
		}
	}
}

// TestAlertmanagerConfigIsTheShippedRouting: the demo's Alertmanager
// routes and inhibits as docs/alertmanager.yaml (the routing the project
// ships) but for the group interval and the receivers' addresses.
func TestAlertmanagerConfigIsTheShippedRouting(t *testing.T) {
	b := testenv.RepoFile(t, "docs", "alertmanager.yaml")
	var shipped map[string]any
	if err := yaml.Unmarshal(b, &shipped); err != nil {
		t.Fatal(err)
	}
	var demo map[string]any
	cfg, err := alertmanagerConfig(&receiver{addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &demo); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(demo["inhibit_rules"], shipped["inhibit_rules"]) {
		t.Errorf("inhibit_rules %v, shipped %v", demo["inhibit_rules"], shipped["inhibit_rules"])
	}
	routes := func(cfg map[string]any) []any { return cfg["route"].(map[string]any)["routes"].([]any) }
	d, s := routes(demo), routes(shipped)
	if len(d) != len(s) {
		t.Fatalf("%d routes, shipped %d", len(d), len(s))
	}
	for i := range d {
		dr, sr := d[i].(map[string]any), s[i].(map[string]any)
		if dr["group_interval"] != amTiming.GroupInterval {
			t.Errorf("route %d: group_interval %v, want the demo's %s", i, dr["group_interval"], amTiming.GroupInterval)
		}
		delete(dr, "group_interval")
		delete(sr, "group_interval")
		if !reflect.DeepEqual(dr, sr) {
			t.Errorf("route %d: %v, shipped %v", i, dr, sr)
		}
	}
	recv := demo["receivers"].([]any)
	if len(recv) != 3 {
		t.Errorf("receivers %v, want page, ticket and other", recv)
	}
}
