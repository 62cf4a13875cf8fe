package sim

import (
	"cmp"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/slo"
	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// pageCorpus are histories whose pages were once false or missed, as
// TestRandomPages found them (as data: the generator may change).
var pageCorpus = []struct {
	name string
	h    History
	// lie, when set, names the resource of a false page (or, with
	// lieRule "missed page", a missed one) the history still shows, found
	// and reported but not fixed yet: every violation must be of that rule
	// and resource, and the test fails once none is left (then drop it).
	lie, lieRule string
}{
	{
		// oracle: two restores of 100 revisions, no canary: the store
		// lacked the reverts and nothing could show it (a stale page is
		// justified, none owed; the invariants waive staleness alike)
		name: "a store stale for reverts no canary could show (seed 338)",
		h: History{Seed: 338, Duration: 125 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resWidgets, resMetrics}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 125 * time.Minute, Rate: 0.05, Keys: 20}, {Resource: "secrets", Start: 0, End: 125 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "samples.metrics.example.io", Start: 0, End: 125 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 211 * time.Second, Dur: 20 * time.Second, Back: 100}, {Kind: "restore", Start: 1211 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}},
		},
	},
	{
		name: "a CRD deleted twice over: the model re-created it twice and left the watch on an orphan cache (bookmarks, no events), a stall no real server makes; model fixed (seed 856)",
		h: History{Seed: 856, Duration: 100 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 100 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "delete-crd", Start: 3362 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "delete-crd", Start: 4158 * time.Second, Dur: 2 * time.Minute, Resource: "configmaps"}, {Kind: "restore", Start: 4536 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// etcd restored with every API server restarted: the busy
		// extension resource's watch (5 writes/s, resource versions not
		// integers, freshness reads off) resumed above etcd's new
		// revision and heard nothing for 29 min; judged by whole sessions,
		// as a quiet watch without reads may be, it never stalled. A watch
		// busy when its session opened keeps the minute's cadence
		name: "a busy watch resumed above a restored etcd (seed 334)",
		h: History{Seed: 334, Duration: 175 * time.Minute, Background: 0,
			Setup: Setup{Servers: 2, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resEvents, resMetrics}},
			Loads:  []Load{{Resource: "events", Start: 0, End: 175 * time.Minute, Rate: 0.5, Keys: 20}, {Resource: "samples.metrics.example.io", Start: 0, End: 175 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restart", Start: 1118 * time.Second, Dur: 30 * time.Second}, {Kind: "restore", Start: 1505 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// the informers' connection hung new requests for 15 min while
		// the open watch streams flowed: quiet secrets' freshness reads
		// failed, its bookmarks carried the watch cache's old RV (etcd's
		// progress every 10 min), and its staleness grew to 600 s for a
		// store missing nothing: the staleness burn paged. Staleness is
		// unknown while the reads it rests on fail (Proof.blind). Later
		// its watch reopened on time at its cache's revision and heard
		// nothing (no read moved the cache), taken for a stall, and
		// staleness grew again: a failed read moves a cache no more than
		// none (Watch.ReadEnded)
		name: "a quiet store whose freshness reads hang (seed 327)",
		h: History{Seed: 327, Duration: 178 * time.Minute, Background: 0,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 178 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "refuse", Start: 6226 * time.Second, Dur: 15 * time.Minute, Host: "probe", Code: 500}, {Kind: "hang", Start: 6454 * time.Second, Dur: 45 * time.Second, Host: "informers"}, {Kind: "hang", Start: 8081 * time.Second, Dur: 15 * time.Minute, Host: "informers"}},
		},
	},
	{
		// oracle: an informer that had not listed since a restore of its
		// etcd paged ahead of the head (its store may hold objects of
		// the lost history until it lists: README "RV regressions"), and
		// the oracle found nothing wrong with it
		name: "a store not listed since a restore pages ahead of the head (seed 63)",
		h: History{Seed: 63, Duration: 116 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resDeploys, resEvents, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 116 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "events", Start: 0, End: 116 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "delete-crd", Start: 3104 * time.Second, Dur: 45 * time.Second, Resource: "gadgets.legacy.example.io"}, {Kind: "delete-crd", Start: 3604 * time.Second, Dur: 15 * time.Minute, Resource: "gadgets.legacy.example.io"}, {Kind: "restore", Start: 4315 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		// oracle: a watch on an etcd nobody writes to never had a
		// bookmark (its cache never moved past its start): the exporter
		// judges it by its sessions, like a server that sends none; the
		// oracle wanted a stall page within the bookmark cadence's time
		name: "a frozen watch on an idle etcd is judged by its sessions (seed 586)",
		h: History{Seed: 586, Duration: 113 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resEvents}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 113 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "freeze", Start: 6230 * time.Second, Dur: 15 * time.Minute, Host: "informers", Reset: true}},
		},
	},
	{
		// three API servers, freshness reads off, etcd's progress every 10
		// min: quiet widgets' watches heard nothing for whole sessions
		// (RvsyncWatchStalled, then the staleness and RV-lag burns, on a
		// watch missing nothing); and after a restore with every API
		// server restarted, configmaps' watch resumed above etcd's new
		// revision, silent on time, and nothing paged for 11 minutes
		// (the store, which had not listed since, was not ahead of the
		// head until it applied something)
		name: "quiet watches without reads; a store silent since a restore (seed 514)",
		h: History{Seed: 514, Duration: 113 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resWidgets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 113 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 2903 * time.Second, Dur: 2 * time.Minute, Server: 1, Resource: "configmaps"}, {Kind: "restore", Start: 4497 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// the List-latency SLI counted the informer's 404s while the
		// resource was not served as failed Lists: a resource that lists
		// rarely burned its whole budget in ten seconds and paged
		name: "deleted resource pages List latency (seed 12)",
		h: History{Seed: 12, Duration: 116 * time.Minute, Background: 10,
			Setup:  Setup{Canary: "configmaps", NoFreshnessReads: true, Etcds: []model.EtcdSpec{{Name: "main", Revision: 1000, ProgressNotify: 5 * time.Second}}, Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 116 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: DeleteCRD, Start: 1982 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}, {Kind: DeleteCRD, Start: 6602 * time.Second, Dur: 10 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		name: "with freshness reads off, the proof period was computed as if they ran (79 s) while bookmarks proved a quiet cache only every 10 minutes of etcd's progress notifications: its healthy sawtooth burned the staleness SLO and paged (seed 102)",
		h: History{Seed: 102, Duration: 90 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resWidgets, resDeploys}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 90 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "widgets.example.com", Start: 0, End: 90 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "slow-server", Start: 2579 * time.Second, Dur: 15 * time.Minute, Latency: 200 * time.Millisecond}, {Kind: "hang", Start: 3142 * time.Second, Dur: 15 * time.Minute, Host: "probe"}},
		},
		// The model sends a watch no bookmark at or below the revision it
		// started from, as kube-apiserver does (seen by
		// test/sim/conformance): the quiet deployments.apps watch hears
		// nothing while nothing moves its watch cache (no write to it,
		// etcd's progress notifications every 10 min, no freshness reads).
		// RvsyncWatchStalled fired at 1h7m30s and 1h16m30s, the staleness
		// and RV-lag burns at 1h19m, on a live watch missing nothing, until
		// a watch without reads was given its session to be silent in
		// (proof.Watch.Cadence), its sessions ended on time counted as
		// signs of life, and its sawtooth across them as healthy.
	},
	{
		name: "a quiet resource whose server sends no bookmarks: nothing proves its cache fresh, staleness grew for as long as nobody wrote and paged (state no_bookmarks now, staleness absent) (seed 114)",
		h: History{Seed: 114, Duration: 160 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resDeploys, resMetrics, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 160 * time.Minute, Rate: 5, Keys: 5}, {Resource: "secrets", Start: 0, End: 160 * time.Minute, Rate: 5, Keys: 5}, {Resource: "deployments.apps", Start: 0, End: 160 * time.Minute, Rate: 0.05, Keys: 20}, {Resource: "samples.metrics.example.io", Start: 0, End: 160 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 6304 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}, {Kind: "restore", Start: 8189 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		// found by make test-sim's seed range 200001 on 4 December; triaged
		// 6 December (later): the exporter measured the stall right
		// (staleness 133 s at 840 s, rising), and the staleness burn fired
		// at 30 min, the first instant half of its 1h window was on record
		// (a fresh install cannot page on minutes of data: the README); the
		// oracle owed it by 12 min after 735 s, ignoring that warm-up, and
		// now owes a burn page no sooner than burnWarmup
		name: "a stuck watch cache of a resource written every 20s, no freshness reads: stale above the threshold 735-1605s, paged at 30 min, once a fresh install's burn may page (seed 200030)",
		h: History{Seed: 200030, Duration: 129 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 129 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "secrets", Start: 0, End: 129 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "stuck", Start: 707 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "stuck", Start: 3242 * time.Second, Dur: 6 * time.Minute, Resource: "secrets"}},
		},
	},
	{
		// found by make test-sim's seed range 200001 on 4 December; fixed 6
		// December (later), as 7401156: a session reopened just before the
		// freeze, its reads failing, waited its length; its cache was seen
		// to move without its reads (etcd's 5-s progress notify), so its
		// bookmarks are due each period whatever the reads do
		name: "a watch not delivering 7245-8145s, paged by 7635s (seed 200047)",
		h: History{Seed: 200047, Duration: 175 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resDeploys}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 175 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "hang", Start: 2887 * time.Second, Dur: 10 * time.Second, Host: "informers"}, {Kind: "freeze", Start: 7254 * time.Second, Dur: 15 * time.Minute, Host: "informers"}, {Kind: "refuse", Start: 8342 * time.Second, Dur: 15 * time.Minute, Host: "informers", Code: 500}},
		},
	},
	{
		// found by the page histories of seed range 7200001 on 5 December
		// (the rules of ca99022 fire at the same instants), not fixed yet.
		// Of the class of 200047 and 200123, and why: the informers' watch
		// sessions of the idle resources reopened 5 s before their
		// connection froze; a session with no bookmark yet whose freshness
		// reads fail may wait its timeout (a failed read moves no cache:
		// 4e9a52b), so the bookmark period read the session's 357 s and the
		// stall alert came 105 s after the oracle's 6 min 30 s. A read that
		// gets no answer cannot tell a frozen connection from one whose
		// requests wait in the API server's queues while its watch streams.
		// Paged in time since the head probe's check reads of 6 December:
		// they move the caches at start, so the sessions' phases shift and
		// none reopens just before the freeze any more. Not a fix of the
		// class; kept so a change that misses it again shows. Since 6
		// December (later) a cache seen to move without the informer's
		// reads has its bookmarks due each period whatever the reads do,
		// which pages 200047 and 7401156 in time (etcd's 5-s progress
		// notify); here, on etcd's 10-minute interval, only the reads move
		// the idle caches, and a failed read still cannot tell a frozen
		// connection from a queued one.
		name: "watches reopened just before their connection froze, not paged by 6015s (seed 7200509)",
		h: History{Seed: 7200509, Duration: 152 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resWidgets, resMetrics}},
			Loads:  []Load{{Resource: "samples.metrics.example.io", Start: 0, End: 152 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "freeze", Start: 5638 * time.Second, Dur: 15 * time.Minute, Host: "informers"}},
		},
	},
	{
		// found by make test-sim's seed range 200001 on 4 December, not fixed yet
		// triaged 6 December (later): the freshness reads are off and the
		// resource idle, so nothing moves its watch cache but etcd's
		// 10-minute progress notify, and a healthy session may hear
		// nothing until its timeout: its watch resumed above the
		// restored revision looks the same; no client could know sooner.
		// The oracle owes its page only past a session (unreadStallPage),
		// stated in docs/failure-modes.md; kept so that bound stays exact
		name: "a watch not delivering 3195-3645s, no page owed within a session and 6.5 min (seed 200123)",
		h: History{Seed: 200123, Duration: 101 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resWidgets, resDeploys, resEvents, resMetrics}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 101 * time.Minute, Rate: 0.5, Keys: 20}, {Resource: "widgets.example.com", Start: 0, End: 101 * time.Minute, Rate: 5, Keys: 20}, {Resource: "deployments.apps", Start: 0, End: 101 * time.Minute, Rate: 5, Keys: 20}, {Resource: "events", Start: 0, End: 101 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "delete-crd", Start: 2506 * time.Second, Dur: 45 * time.Second, Resource: "events"}, {Kind: "restore", Start: 3205 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// found by the default world's page histories of 6 December
		// (later; seeds 375001-375100, 1 of 100), failing on that day's
		// code before its changes too: an extension API server's
		// resource (its staleness unknown by design), idle, freshness
		// reads off, the main etcd restored 50,000 revisions back with
		// the API servers' caches reset. Triaged 6 December (latest): the
		// oracle's. Its watch resumed above its new cache, so its server
		// sent nothing and ended each session on time for 52 min, as it
		// does a healthy watch of a cache that does not move; with no
		// read to move the cache and no integer head to show its storage
		// moving, no client can tell them apart (giving up on a silent
		// session 11 min after the latest bookmark paged this stall, and
		// failed TestABusyWatchWithoutReadsHearsWithinAPeriod's healthy
		// quiet session). A page is justified, none owed; kept so that
		// waiver stays exact
		name: "a watch not delivering 1425-4575s, no page owed (seed 375032)",
		h: History{Seed: 375032, Duration: 152 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second,
				Resources: []Watched{resConfigMaps, {ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers"}}}, resMetrics, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 152 * time.Minute, Rate: 0.5, Keys: 20}, {Resource: "events", Start: 0, End: 152 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 1430 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// found by make test-sim's seed range 200001 on 4 December: the
		// model held the informers' HTTP/2 connection frozen for all 15
		// min, the deployments watch opened just before it hung, and its
		// cadence was learned as the session's 499 s timeout
		// (RvsyncWatchStalled 195 s late). client-go's health check
		// closes such a connection 45 s after its last frame; model fixed
		// 7 December: paged at 2940 s
		name: "a watch not delivering 2685-3585s, paged by 3075s; the model froze an HTTP2 connection past its health check (seed 200178)",
		h: History{Seed: 200178, Duration: 101 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resDeploys, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 101 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "secrets", Start: 0, End: 101 * time.Minute, Rate: 5, Keys: 1}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 101 * time.Minute, Rate: 0.5, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 276 * time.Second, Dur: 15 * time.Minute, Server: 1, Resource: "configmaps"}, {Kind: "freeze", Start: 2694 * time.Second, Dur: 15 * time.Minute, Host: "informers"}},
		},
	},
	{
		// found by the page histories of 6 December (seeds 7400001-7400250),
		// missed on the code before that day's changes too; not triaged yet
		// triaged 6 December (later): the freshness reads are off and the
		// resource idle, so nothing moves its watch cache but etcd's
		// 10-minute progress notify, and a healthy session may hear
		// nothing until its timeout: its watch resumed above the
		// restored revision looks the same; no client could know sooner.
		// The oracle owes its page only past a session (unreadStallPage),
		// stated in docs/failure-modes.md; kept so that bound stays exact
		name: "a restore 50,000 back, then the extension resource's CRD deleted for 10 s: its watch not delivering 4335-4845s, no page owed within a session and 6.5 min (seed 7400229)",
		h: History{Seed: 7400229, Duration: 162 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resDeploys, resEvents, resMetrics}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 162 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "events", Start: 0, End: 162 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "stuck", Start: 1687 * time.Second, Dur: 45 * time.Second, Resource: "deployments.apps"}, {Kind: "restore", Start: 4346 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}, {Kind: "delete-crd", Start: 5156 * time.Second, Dur: 10 * time.Second, Resource: "samples.metrics.example.io"}},
		},
	},
	{
		// found by the page histories of 6 December (seeds 7401001-7401250),
		// missed on the code before that day's changes too; fixed 6
		// December (later): the freeze came just after secrets' session
		// reopened, failing its freshness reads and silencing its watch
		// alike, and a quiet session whose reads fail may wait its length
		// (526 s), so RvsyncWatchStalled fired at 39m30s; a cache seen to
		// move without the informer's reads (etcd's 5-s progress notify
		// here) has its bookmarks due each period whatever the reads do
		// (Watch.BookmarkRV, TestACacheThatMovesAloneHearsAPeriodWhileReadsFail)
		name: "the informers' connection frozen 15 min from 1748s: secrets' watch not delivering 29-44 min, paged by 2130s (seed 7401156)",
		h: History{Seed: 7401156, Duration: 105 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second,
				Resources: []Watched{resConfigMaps, resSecrets, resEvents, resMetrics}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 105 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "events", Start: 0, End: 105 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "samples.metrics.example.io", Start: 0, End: 105 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 1748 * time.Second, Dur: 15 * time.Minute, Host: "informers"}, {Kind: "freeze", Start: 4379 * time.Second, Dur: 6 * time.Minute, Host: "probe"}},
		},
	},
	{
		// found by the page histories of seed range 7500001 on 6 December,
		// on the code before that day's check reads too; of the class of
		// 200123 (an etcd restore with its caches reset, no canary: the
		// aggregated resource's watch not delivering is not paged in
		// time), not fixed yet
		// triaged 6 December (later): the freshness reads are off and the
		// resource idle, so nothing moves its watch cache but etcd's
		// 10-minute progress notify, and a healthy session may hear
		// nothing until its timeout: its watch resumed above the
		// restored revision looks the same; no client could know sooner.
		// The oracle owes its page only past a session (unreadStallPage),
		// stated in docs/failure-modes.md; kept so that bound stays exact
		name: "a watch not delivering 8280-8685s after a restore, no page owed within a session and 6.5 min (seed 7500008)",
		h: History{Seed: 7500008, Duration: 145 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resSecrets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resMetrics.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 145 * time.Minute, Rate: 5, Keys: 20}, {Resource: "secrets", Start: 0, End: 145 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 8293 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// found by page histories of -sim.widen=http1,informers,scopes,lifecycle,
		// seeds 380801-380830 on 6 December (evening), failing on the
		// code before that day's changes too (3335419): an extension API
		// server's resource (opaque RVs, a slow load), the reads off, two
		// API servers, the main etcd restored 5,000 back with the caches
		// reset. Fixed 7 December: the exporter's watch of it stopped
		// delivering, and an operator's informer of an empty namespace,
		// whose server sent no bookmark, had its session's length, 597 s,
		// as its cadence; the resource reported the longest silence
		// (820 s) beside the longest cadence (597 s), and
		// RvsyncWatchStalled, which compares the two, never fired. Both
		// are now the most overdue informer's
		// (TestSilenceAndPeriodAreOneInformersTheMostOverdue): paged at
		// 6720 s
		name: "a watch not delivering 6435-7245s, paged by 6825s (seed 380801)",
		h: History{Seed: 380801, Duration: 121 * time.Minute, Background: 0,
			Setup: Setup{Servers: 2, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-ns", Embedded: true, SlowStore: 0, Namespace: "ns"}}}, {ResourceSpec: resSecrets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 49 * time.Second}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 72 * time.Second}}}, {ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 139 * time.Second, StopAfter: 887 * time.Second}}}, {ResourceSpec: resMetrics.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-ns", Embedded: true, SlowStore: 0, Namespace: "ns"}, {Host: "ctrl-quiet", Embedded: true, SlowStore: 0, Namespace: "quiet"}}}}},
			Loads:  []Load{{Resource: "secrets", Start: 0, End: 121 * time.Minute, Rate: 5, Keys: 20}, {Resource: "deployments.apps", Start: 0, End: 121 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "samples.metrics.example.io", Start: 0, End: 121 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "refuse", Start: 3722 * time.Second, Dur: 2 * time.Minute, Host: "informers", Code: 500}, {Kind: "refuse", Start: 5904 * time.Second, Dur: 45 * time.Second, Host: "probe", Code: 429}, {Kind: "restore", Start: 6443 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 5000}},
		},
	},
	{
		// the same run (seed 380810), failing on 3335419 too, and with no
		// fault at all: secrets idle, the reads off, etcd without
		// progress notifications: the staleness burn paged from 30 min to
		// the end. It fails without the operator's informer too, so the
		// default world draws it. Triaged (6 December, night): once its
		// watch reopens at its cache's RV (about 10 min in), nothing
		// moves that cache again (no progress notification, no read),
		// its server sends no bookmark, every session ends on time, and
		// the staleness, a bound, grows to hours with the state ok. No
		// client can tell that cache from a stuck one (on etcd's
		// 10-minute interval the same growth is a stall, and pages
		// rightly), so the page is justified where the etcd sends no
		// progress notifications at all: a stated limitation
		// (History.progressless; README, Limits)
		name: "a staleness burn page on an idle resource nothing can prove fresh, justified (seed 380810)",
		h: History{Seed: 380810, Duration: 153 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}}, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 31 * time.Second}}}, {ResourceSpec: resSecrets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 118 * time.Second, StopAfter: 257 * time.Second}}}, {ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 153 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{},
		},
	},
	{
		// found by the first page histories of every widened dimension,
		// seeds 1000101-1000150 on 7 December, failing on the code of the
		// morning too: a critical RvsyncInformerAheadOfHead for 84 min on
		// events, on an etcd of its own with its `space:` omitted, in a
		// monitor whose Start never runs (nothing reads which etcd a
		// resource answers from): the recovery row's stated waiver, now the
		// page oracle's too (History.unsettled)
		name: "events ahead of a head of another etcd in a space nothing settles, page justified (seed 1000145)",
		h: History{Seed: 1000145, Duration: 109 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, NoStart: true,
				Resources: []Watched{{ResourceSpec: resEvents.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-restarted", Embedded: true, StopAfter: 459 * time.Second, RestartAfter: 672 * time.Second}, {Host: "ctrl-typed", Embedded: true, Typed: true}, {Host: "ctrl-meta", Embedded: true}}}, {ResourceSpec: resNoBookmark.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl", Embedded: true}, {Host: "ctrl-quiet", Embedded: true, Namespace: "quiet"}, {Host: "ctrl-restarted", Embedded: true, StopAfter: 427 * time.Second, RestartAfter: 690 * time.Second}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-late", Embedded: true, StartAfter: 200 * time.Second, StopAfter: 639 * time.Second}, {Host: "ctrl-typed", Embedded: true, Typed: true}, {Host: "ctrl-meta", Embedded: true}, {Host: "ctrl-field", Embedded: true, Field: "metadata.name=rvsync-canary"}}}, {ResourceSpec: resDeploys.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-late", Embedded: true, StartAfter: 565 * time.Second}, {Host: "ctrl-restarted", Embedded: true, StopAfter: 223 * time.Second, RestartAfter: 225 * time.Second}}}}},
			Loads: []Load{{Resource: "events", Start: 0, End: 109 * time.Minute, Rate: 0.5, Keys: 5}},
		},
	},
	{
		// found by the first page histories with -sim.widen=all and the
		// cutoff dimension (seeds 1600001-1600080, 7 December), failing
		// on main's 51722f0 alike (no cutoff in it): the informers'
		// connection frozen 6 min under one API server, the stall page on
		// configmaps names no stage where its delay is cache_to_client
		// (seed 1600030 is the same with two API servers, three
		// resources). An exporter lie of the stage rules (slo/); history
		// cut to its first 40 min, its later refused head probe dropped.
		// Fixed by the rules naming a watch cache once its RV stands still
		// (how that fixes this page was not traced: likely the
		// lately-behind guard of 0bc9206, no longer tripped by a quiet cache)
		name: "a frozen informers' connection: its stall page names no stage (seed 1600053)",
		h: History{Seed: 1600053, Duration: 40 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}}, ListLatency: 2 * time.Second, ServerMetrics: true, MoreCanaries: []string{"gadgets.legacy.example.io"},
				Resources: []Watched{{ResourceSpec: resNoBookmark.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-ns", Embedded: true, SlowStore: 0, Namespace: "ns"}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 519 * time.Second, StopAfter: 1058 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resSecrets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 455 * time.Second}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 442 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=obj-0"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 40 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "secrets", Start: 0, End: 40 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "freeze", Start: 808 * time.Second, Dur: 6 * time.Minute, Host: "informers"}},
		},
	},
	{
		// found in the same run as seed 1600053 (above), failing on 51722f0
		// alike: configmaps' watch cache stuck 2 min on the one API
		// server (a restore 25 min before), the canary-delivery burn
		// page names cache_to_client, "23m 9s", where the delay's stage
		// is etcd_to_cache. An exporter lie of the stage rules (slo/);
		// history cut to its first 50 min. Fixed by the rules naming a
		// watch cache once its RV stands still, its whole trail
		name: "a stuck cache: its canary-delivery page names cache_to_client (seed 1600019)",
		h: History{Seed: 1600019, Duration: 50 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}}, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 63 * time.Second, StopAfter: 761 * time.Second}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 50 * time.Minute, Rate: 0.5, Keys: 1}},
			Faults: []Fault{{Kind: "restore", Start: 848 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}, {Kind: "stuck", Start: 2330 * time.Second, Dur: 2 * time.Minute, Resource: "configmaps"}},
		},
	},
	{
		// widened page histories 1700001-1700100 (7 December, on the
		// final code of the day): an aggregated API's resource
		// (samples.metrics.example.io) with its informers' connection
		// frozen 15 min: its stall page named no stage, and the stage
		// oracle judged it as cache_to_client. A lie of the model's
		// scrape: it reported a kube-apiserver watch cache's RV for a
		// resource an extension API server serves, a series no real
		// server has. Fixed: the scrape and the oracle leave out every
		// resource no watch cache serves (Watched.Cached), whose pages read
		// as without the servers' metrics
		name: "an aggregated API's stall page, no watch cache of it on any server (seed 1700074)",
		h: History{Seed: 1700074, Duration: 149 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, ServerMetrics: true, MoreCanaries: []string{"deployments.apps"},
				Resources: []Watched{{ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-rvsync", Embedded: true, SlowStore: 0, Namespace: "rvsync"}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-shard-b", Embedded: true, SlowStore: 0, Selector: "shard=b"}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 288 * time.Second}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 745 * time.Second, RestartAfter: 810 * time.Second}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=obj-0"}}}, {ResourceSpec: resMetrics.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 198 * time.Second, RestartAfter: 198 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 149 * time.Minute, Rate: 5, Keys: 1}, {Resource: "widgets.example.com", Start: 0, End: 149 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "samples.metrics.example.io", Start: 0, End: 149 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 7775 * time.Second, Dur: 15 * time.Minute, Host: "informers"}},
		},
	},
	{
		// random pages 1900001-1900150 (widened) on the code before: two
		// lies of one history, both failing then. A missed page: three API
		// servers on HTTP/1.1, one cut off etcd for 15 minutes; the
		// probe's head read there timed out, and the model put its
		// connection back in the pool, so every later read took it and
		// hung, while the exporter's informer sat on that server's stuck
		// cache: head unknown, no staleness, no page (the model's lie:
		// Go's transport closes a connection whose request it gave up;
		// TestAGivenUpHTTP1RequestClosesItsConnection). And an idle
		// resource's stalled watch (events, nothing written, the
		// informers' connection frozen) paged with no stage: no delivery
		// delay was known, only the silence; the watch's silence past its
		// bookmark period is now an end-to-end delay (signal
		// watch_silence), so its stage comes out cache_to_client
		name: "a server cut off etcd behind HTTP/1.1, an idle resource's stalled watch (seed 1900009)",
		h: History{Seed: 1900009, Duration: 100 * time.Minute, Background: 0,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, HTTP1: true, ServerMetrics: true, MoreCanaries: []string{"configmaps"},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-rvsync", Embedded: true, SlowStore: 0, Namespace: "rvsync"}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 576 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resEvents.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 845 * time.Second, RestartAfter: 896 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}}}, {ResourceSpec: resNoBookmark.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 323 * time.Second, StopAfter: 716 * time.Second}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=rvsync-canary"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 100 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "widgets.example.com", Start: 0, End: 100 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 100 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 357 * time.Second, Dur: 6 * time.Minute, Host: "informers", Reset: true}, {Kind: "stuck", Start: 42 * time.Minute, Dur: 45 * time.Second, Server: 2, Resource: "gadgets.legacy.example.io"}, {Kind: "cutoff", Start: 2839 * time.Second, Dur: 15 * time.Minute, Server: 1}, {Kind: "restore", Start: 4533 * time.Second, Dur: 20 * time.Second, Back: 100}},
		},
	},
	{
		// make test-sim SIM_SEED=3200001 (7 December, on b0126eb), failing
		// there: a monitor whose Start never runs (no head probe), API
		// server metrics on, deployments' watch cache stuck 15 min; its
		// canary-delivery and watch-stalled pages name cache_to_client
		// "from remainder", where the delay's stage is etcd_to_cache.
		// With no head, the stage rules cannot put the cache behind etcd
		// and gave the whole delay to the remainder. Fixed: no remainder
		// where no head is known (alerts/testdata/stages.test.yaml, "no
		// head"). Then the pages named the client, from its
		// wire-to-store lag p99 (29.7 s): where Start never runs, the
		// store's RV is read at each scrape, and the bookmarks it showed
		// applied counted the wait for that read. Fixed: they count to
		// the read before (TestABookmarkFoundAtTheNextScrapeHasNoStoreLag);
		// the pages name no stage, honestly
		name: "a stuck cache with no head probe: its pages named cache_to_client, then client (seed 3200561)",
		h: History{Seed: 3200561, Duration: 92 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, NoStart: true, ServerMetrics: true, MoreCanaries: []string{"deployments.apps", "widgets.example.com"},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-rvsync", Embedded: true, SlowStore: 0, Namespace: "rvsync"}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 488 * time.Second, StopAfter: 1218 * time.Second}}}, {ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}}}, {ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "widgets.example.com", Start: 0, End: 92 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "deployments.apps", Start: 0, End: 92 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "cutoff", Start: 215 * time.Second, Dur: 15 * time.Minute}, {Kind: "slow-server", Start: 1274 * time.Second, Dur: 6 * time.Minute, Latency: 200 * time.Millisecond}, {Kind: "stuck", Start: 2545 * time.Second, Dur: 15 * time.Minute, Resource: "deployments.apps"}, {Kind: "slow", Start: 3424 * time.Second, Dur: 10 * time.Second, Host: "probe", Latency: 20 * time.Second}},
		},
	},
	{
		// make test-sim SIM_SEED=3200001 (7 December, on b0126eb), failing
		// there: two API servers, the freshness reads off, a canary of
		// deployments; one server cut off etcd 15 min, the one holding
		// both the head probe's connection and a restarted operator
		// informer of deployments. The head is unknown for the whole
		// cutoff, so no staleness nor RV lag is reported, though the
		// canary's writes, through the live server, land and that
		// informer misses them (stale above the threshold for 14.5 min):
		// no page. Fixed: once the head was read, the canary's writes,
		// while they answer, are heads of their resource (a store that
		// reaches one, by its event or by a bookmark or another object's
		// event above it, is fresh as of the write; one behind them stays
		// stale from its last proof): TestTheCanarysWritesAreHeadsWhileTheHeadIsUnknown
		name: "the head probe's server cut off etcd: a store behind the canary's writes pages (seed 3200580)",
		h: History{Seed: 3200580, Duration: 116 * time.Minute, Background: 0,
			Setup: Setup{Servers: 2, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, MoreCanaries: []string{"deployments.apps"},
				Resources: []Watched{{ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 768 * time.Second, RestartAfter: 1064 * time.Second}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 421 * time.Second, RestartAfter: 624 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 116 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "deployments.apps", Start: 0, End: 116 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 2061 * time.Second, Dur: 15 * time.Minute, Host: "informers", Reset: true}, {Kind: "refuse", Start: 3425 * time.Second, Dur: 2 * time.Minute, Host: "informers", Code: 429}, {Kind: "cutoff", Start: 5876 * time.Second, Dur: 15 * time.Minute}},
		},
	},
	{
		// random page histories 3600001-3600150 (7 December, on 1917610),
		// failing on 1ef2b2e too: three API servers, a canary of
		// configmaps, the exporter's informers on the server cut off etcd
		// 15 min. Their freshness reads failed, so configmaps and
		// deployments (quiet) went head_unknown, staleness unknown, while
		// their stores missed the canary's writes (landing through
		// another server) and changes the operators' informers on the
		// live servers delivered: stale 14.5 min, no page. A store that
		// lacks a change answered or delivered elsewhere over a minute
		// ago is stale whatever its reads say:
		// TestAQuietStoreBehindTheCanaryIsStaleWhileItsReadsFail
		name: "the informers' server cut off etcd, their reads failing: stores behind the canary and their siblings page (seed 3600078)",
		h: History{Seed: 3600078, Duration: 159 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=obj-0"}}}, resMetrics, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 159 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "deployments.apps", Start: 0, End: 159 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "cutoff", Start: 1191 * time.Second, Dur: 15 * time.Minute}, {Kind: "hang", Start: 7106 * time.Second, Dur: 10 * time.Second, Host: "informers"}},
		},
	},
	{
		// random page histories from 3700001 (7 December, on 71e4e02),
		// failing on 1ef2b2e too: etcd restored 50,000 back with every
		// API server restarted; the extension API's resource
		// (samples.metrics.example.io, RVs not integers) stopped
		// delivering from 5145 s to 9825 s, 78 min, and nothing paged.
		// The oracle's: on HTTP/1.1 the monitor counts on none of its
		// reads (it cannot tell one API server behind a pool from
		// several), so the watch, resumed above its cache, looks like a
		// quiet one whose cache nothing moves, and no head tells whether
		// its storage moved; no page is owed (unread)
		name: "an extension API's watch silent after a restore with the servers restarted pages nothing (seed 3700079)",
		h: History{Seed: 3700079, Duration: 172 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, HTTP1: true, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resMetrics.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=obj-0"}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 464 * time.Second, StopAfter: 982 * time.Second}}}, {ResourceSpec: resNoBookmark.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 48 * time.Second}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 543 * time.Second, RestartAfter: 832 * time.Second}}}, {ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 131 * time.Second, StopAfter: 272 * time.Second}}}, {ResourceSpec: resSecrets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-quiet", Embedded: true, SlowStore: 0, Namespace: "quiet"}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 619 * time.Second, RestartAfter: 757 * time.Second}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=rvsync-canary"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 172 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "secrets", Start: 0, End: 172 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "deployments.apps", Start: 0, End: 172 * time.Minute, Rate: 5, Keys: 20}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 172 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 5153 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		// random page histories from 4000001 (8 December, on 6418731), failing on
		// 822d2fd too: a known lie, not triaged yet
		name: "a freeze of the informers' connection, no head probe (Start never runs), pages WatchStalled naming stage client, not cache_to_client (seed 4000543)",
		h: History{Seed: 4000543, Duration: 101 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}}, DispatchLag: 1 * time.Second, NoStart: true, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-shard-b", Embedded: true, SlowStore: 0, Selector: "shard=b"}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 726 * time.Second, RestartAfter: 952 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 101 * time.Minute, Rate: 5, Keys: 5}, {Resource: "events", Start: 0, End: 101 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 845 * time.Second, Dur: 2 * time.Minute, Resource: "configmaps"}, {Kind: "freeze", Start: 5111 * time.Second, Dur: 15 * time.Minute, Host: "informers"}},
		},
		lie: "events", lieRule: "wrong stage",
	},
	{
		// random page histories from 4000001 (8 December, on 6418731), failing on
		// 822d2fd too: a known lie, not triaged yet
		name: "a store stale 14 min after a restore and a cutoff, no head probe (Start never runs), pages nothing (seed 4000582)",
		h: History{Seed: 4000582, Duration: 122 * time.Minute, Background: 100,
			Setup: Setup{Servers: 2, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}}, DispatchLag: 1 * time.Second, NoStart: true, ServerMetrics: true, MoreCanaries: []string{"configmaps"},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-rvsync", Embedded: true, SlowStore: 0, Namespace: "rvsync"}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 122 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "restore", Start: 1747 * time.Second, Dur: 20 * time.Second, Back: 100}, {Kind: "cutoff", Start: 1932 * time.Second, Dur: 15 * time.Minute}, {Kind: "delete-crd", Start: 4294 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}, {Kind: "slow-server", Start: 4368 * time.Second, Dur: 2 * time.Minute, Latency: 200 * time.Millisecond}},
		},
		lie: "configmaps", lieRule: "missed page",
	},
	{
		// random page histories from 4000001 (8 December, on 6418731), failing on
		// 822d2fd too: staleness unknown while the head probe's server and the
		// store's are cut off etcd; the sibling's freshness reads on another server
		// read the head, but the head is known only from the probe. A known lie
		name: "a busy store cut off with the head probe, its label-selected sibling holding none of the changes, no canary, pages nothing (seed 4000608)",
		h: History{Seed: 4000608, Duration: 178 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl", Embedded: true, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 332 * time.Second}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 90 * time.Second, RestartAfter: 282 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resDeploys.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 178 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "deployments.apps", Start: 0, End: 178 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "cutoff", Start: 4390 * time.Second, Dur: 15 * time.Minute}},
		},
		lie: "deployments.apps", lieRule: "missed page",
	},
	{
		// random page histories from 4000001 (8 December, on 6418731), failing on
		// 822d2fd too: staleness reported 800 s, but the staleness burn that fired
		// for the first stuck cache did not fire again. A known lie, not triaged yet
		name: "a second 15-minute stuck cache soon after the first, staleness known and growing, pages no second staleness burn (seed 4000609)",
		h: History{Seed: 4000609, Duration: 177 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, HTTP1: true, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-ns", Embedded: true, SlowStore: 0, Namespace: "ns"}, {Host: "ctrl-quiet", Embedded: true, SlowStore: 0, Namespace: "quiet"}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 177 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "stuck", Start: 3955 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "stuck", Start: 5198 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "stuck", Start: 9672 * time.Second, Dur: 2 * time.Minute, Resource: "configmaps"}},
		},
		lie: "configmaps", lieRule: "missed page",
	},
	{
		// random page histories from 4000001 (8 December, on 6418731), failing on
		// 822d2fd too: a known lie, not triaged yet
		name: "a stuck watch cache paged as WatchStalled naming stage client, not etcd_to_cache (seed 4000647)",
		h: History{Seed: 4000647, Duration: 124 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}}, ListLatency: 2 * time.Second, NoStart: true, ServerMetrics: true,
				Resources: []Watched{{ResourceSpec: resSecrets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-quiet", Embedded: true, SlowStore: 0, Namespace: "quiet"}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}, {Host: "ctrl-field", Embedded: true, SlowStore: 0, Field: "metadata.name=rvsync-canary"}}}, {ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 425 * time.Second, StopAfter: 993 * time.Second}, {Host: "ctrl-restarted", Embedded: true, SlowStore: 0, StopAfter: 69 * time.Second, RestartAfter: 326 * time.Second}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-shard-a", Embedded: true, SlowStore: 0, Selector: "shard=a"}, {Host: "ctrl-shard-b", Embedded: true, SlowStore: 0, Selector: "shard=b"}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 396 * time.Second, StopAfter: 1092 * time.Second}}}}},
			Loads:  []Load{{Resource: "secrets", Start: 0, End: 124 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "cutoff", Start: 705 * time.Second, Dur: 15 * time.Minute}, {Kind: "slow-server", Start: 4755 * time.Second, Dur: 45 * time.Second, Latency: 200 * time.Millisecond}},
		},
		lie: "secrets", lieRule: "wrong stage",
	},
	{
		// random page histories from 4000001 (8 December, on 6418731): a known lie,
		// not triaged yet
		name: "a store behind an API server cut off etcd for 15 min pages nothing (seed 4000964)",
		h: History{Seed: 4000964, Duration: 148 * time.Minute, Background: 0,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, NoStart: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-late", Embedded: true, SlowStore: 0, StartAfter: 275 * time.Second, StopAfter: 994 * time.Second}}}, {ResourceSpec: resWidgets.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}, {ResourceSpec: resMetrics.ResourceSpec, Space: "", Informers: []Informer{{Host: "informers", Embedded: false, SlowStore: 0}, {Host: "ctrl-ns", Embedded: true, SlowStore: 0, Namespace: "ns"}, {Host: "ctrl-rvsync", Embedded: true, SlowStore: 0, Namespace: "rvsync"}, {Host: "ctrl-typed", Embedded: true, SlowStore: 0, Typed: true}, {Host: "ctrl-meta", Embedded: true, SlowStore: 0}}}}},
			Loads:  []Load{{Resource: "widgets.example.com", Start: 0, End: 148 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "cutoff", Start: 1248 * time.Second, Dur: 15 * time.Minute, Server: 2}, {Kind: "restore", Start: 7026 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
		lie: "widgets.example.com", lieRule: "missed page",
	},
}

func TestPageCorpus(t *testing.T) {
	for _, c := range pageCorpus {
		t.Run(c.name, func(t *testing.T) {
			var scrapes []Scrape
			if _, err := runHistory(t, c.h, func(s Scrape) { scrapes = append(scrapes, s) }); err != nil {
				t.Fatal(err)
			}
			fired, err := EvaluateRules(slo.DefaultSpec(), scrapes, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			reportViolations(t, append(CheckPages(c.h, scrapes, fired), CheckStages(c.h, scrapes, fired).Violations...), c.lie, cmp.Or(c.lieRule, "false page"), c.name)
		})
	}
}
