package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rvsync-slo/rvsync-slo/test/sim/model"
)

// corpus are random histories that once broke an invariant, kept as data
// (the generator may change) with what they caught; TestCorpus replays
// them. Add a failing seed by pasting the history TestRandomHistories
// prints.
var corpus = []struct {
	caught string
	h      History
	// lie, when set, names the resource (or several, separated by "|")
	// whose violation of lieRule (one rule, or several separated by "|")
	// the history still shows, found and reported but not fixed yet (see
	// reportViolations).
	lie, lieRule string
}{
	{
		caught: "a freshness read that failed before a watch showed its server sends no bookmarks marked its staleness unknown for good (no read follows on such a watch): head_unknown 5 min after the faults (an interim version of Proof.blind, never committed; blind now needs bookmarks)",
		h: History{Seed: 69, Duration: 22 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resWidgets, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 22 * time.Minute, Rate: 5, Keys: 1}, {Resource: "widgets.example.com", Start: 0, End: 22 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "freeze", Start: 187 * time.Second, Dur: 2 * time.Minute, Host: "canary", Reset: true}, {Kind: "hang", Start: 303 * time.Second, Dur: 6 * time.Minute, Host: "informers"}, {Kind: "slow", Start: 468 * time.Second, Dur: 6 * time.Minute, Host: "informers", Latency: 200 * time.Millisecond}},
		},
	},
	{
		caught: "a relist completed after a restore but before anything showed it, from a watch cache that kept the lost history and swallowed two writes: its RV was below the lost head, so it was taken as of the new history though the canary's writes after it landed below it: staleness 13s with the changes missing 46s; such a list is judged by the writes after it now (TestAListBeforeTheRestoreShowedIsJudgedByTheWritesAfterIt; the unshrunk seed, with the canary frozen after the list, needed the oracle to treat it as unseen)",
		h: History{Seed: 49838, Duration: 6 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resWidgets, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 6 * time.Minute, Rate: 0.5, Keys: 1}, {Resource: "widgets.example.com", Start: 0, End: 6 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "restart", Start: 195 * time.Second, Dur: 5 * time.Second}, {Kind: "restore", Start: 208 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "oracle: a store listed from a watch cache of the lost history right at a restore stays ahead_of_head until it lists again (it may hold lost objects; its watch resumes above etcd's revision): the recovery check wanted state ok once nothing was missing",
		h: History{Seed: 87725, Duration: 9 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{},
			Faults: []Fault{{Kind: "restart", Start: 182 * time.Second, Dur: 5 * time.Second}, {Kind: "restore", Start: 201 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "oracle: with the freshness reads off the proof period is learned from the last 30 minutes, and a restore no canary could show (a watch cache frozen in the lost history above the head, its bookmarks on time) sawed like a healthy quiet resource: 291s learned; waived for 30 minutes after such a restore (README tolerance row)",
		h: History{Seed: 76451, Duration: 9 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 9 * time.Minute, Rate: 5, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 215 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "oracle (model truth): two restores with the API servers restarted, the second further back than the first: a relisted store held the second's target, but the first's revert of the same key still counted as missing; a revert supersedes what came before it in the truth now",
		h: History{Seed: 29533, Duration: 7 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 7 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "restart", Start: 182 * time.Second, Dur: 5 * time.Second}, {Kind: "restore", Start: 198 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 5000}, {Kind: "restore", Start: 218 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 5000}},
		},
	},
	{
		caught: "a quiet resource on an etcd without progress notifications: bookmarks the server skipped (its cache did not move for want of a read) made the median interval 3 minutes, and reads went out only before the bookmark expected after it: a stuck cache's lag showed 103s after the change it missed; the next bookmark is expected a server period (the shortest interval) after the last now",
		h: History{Seed: 8127, Duration: 6 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0xa, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resEvents}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 6 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "secrets", Start: 0, End: 6 * time.Minute, Rate: 5, Keys: 1}, {Resource: "events", Start: 0, End: 6 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 203 * time.Second, Dur: 15 * time.Minute, Resource: "events"}},
		},
	},
	{
		caught: "a 10s freeze of the informers' connection delayed a bookmark; the next was predicted a period after its receipt, 9s after the server sent it, so the freshness read went out after it and a cache stuck just before showed RV lag 0 for a bookmark period more; a bookmark held on the way keeps the server's schedule now",
		h: History{Seed: 603496, Duration: 5 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resEvents}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 5 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 181 * time.Second, Dur: 10 * time.Second, Host: "informers"}, {Kind: "stuck", Start: 208 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}},
		},
	},
	{
		caught: "a busy resource's freshness read was skipped while events had proven the store fresh within 16s, so a cache that stopped 10s before a bookmark got no read before it: RV lag 0 with 379 changes missing for 76s; every bookmark is read before now",
		h: History{Seed: 637768, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resSecrets, resWidgets}},
			Loads:  []Load{{Resource: "secrets", Start: 0, End: 6 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 224 * time.Second, Dur: 2 * time.Minute, Resource: "secrets"}},
		},
	},
	{
		caught: "after a restore the reads fell twice, first to a watch cache frozen in the lost history, then to etcd's revision: 2 regressions counted for 1 restore; a history begun by the reads falling that nothing moved since falls again as the same loss now",
		h: History{Seed: 631432, Duration: 5 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resDeploys}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 5 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 187 * time.Second, Dur: 20 * time.Second, Back: 50000}, {Kind: "delete-crd", Start: 195 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}, {Kind: "delete-crd", Start: 225 * time.Second, Dur: 15 * time.Minute, Resource: "deployments.apps"}},
		},
	},
	{
		caught: "oracle: a list from a watch cache of the lost history lacked writes it swallowed (revisions reused after the restore) while no canary could show the restore; the staleness check exempted it, the lag check did not: both exempt what a restore cannot show now",
		h: History{Seed: 630184, Duration: 6 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 6 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 194 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}, {Kind: "restore", Start: 216 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "oracle: the canary's CRD was deleted a second after a restore, before the canary's next write could land below the reads; the checker took the restore as visible: a canary resource deleted within a canary interval after a restore leaves it unseen now",
		h: History{Seed: 618020, Duration: 5 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resNoBookmark}},
			Loads:  []Load{{Resource: "gadgets.legacy.example.io", Start: 0, End: 5 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 223 * time.Second, Dur: 20 * time.Second, Back: 5000}, {Kind: "delete-crd", Start: 224 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		caught: "a freshness read refused (429) after a restart blocked every later read until a bookmark came, and with etcd sending no progress notifications only a read moves a quiet cache: no bookmark ever came, staleness grew to 306s on a store missing nothing (seed 500381 alike); a read with no bookmark after it is tried again a cadence later now",
		h: History{Seed: 505019, Duration: 9 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 9 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 9 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "restart", Start: 207 * time.Second, Dur: 30 * time.Second}, {Kind: "refuse", Start: 226 * time.Second, Dur: 2 * time.Minute, Host: "informers", Code: 429}},
		},
	},
	{
		caught: "a 2-minute probe hang failed the reference over to another source; the old reference answered first when it ended, but the head stayed the old reference's last, from before the hang, until the new one answered: lag head - RV read 0 with 8 changes missing for 82s (seed 416683 alike); the next accepted sample after a failover is the head now",
		h: History{Seed: 422495, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resNoBookmark}},
			Faults: []Fault{{Kind: "hang", Start: 190 * time.Second, Dur: 2 * time.Minute, Host: "probe"}, {Kind: "stuck", Start: 226 * time.Second, Dur: 6 * time.Minute, Resource: "configmaps"}},
		},
	},
	{
		caught: "a restore, then the canary's CRD deleted: two resources' watch caches frozen at the same revision of the lost history answered their freshness reads alike, above the new history; their run was no one source's, so the reference's next lower sample counted a second restore; heads above that no reference saw are dropped whoever saw them now",
		h: History{Seed: 421893, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets, resDeploys}},
			Faults: []Fault{{Kind: "restore", Start: 220 * time.Second, Dur: 20 * time.Second, Back: 50000}, {Kind: "delete-crd", Start: 223 * time.Second, Dur: 10 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		caught: "the checker: a restore under a canary slowed 20s is unknowable for four of its round trips, not two: the canary object did not exist in the backup, so the write after the one in flight got a 404 and created it (staleness 4s with a revert missing for 70s was no lie)",
		h: History{Seed: 427633, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps}},
			Faults: []Fault{{Kind: "slow", Start: 207 * time.Second, Dur: 15 * time.Minute, Host: "canary", Latency: 20 * time.Second}, {Kind: "restore", Start: 275 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "freshness reads off, nothing faulted: the first bookmark of a quiet resource, skipped by the server while etcd did not move, closed a sawtooth whose peak was measured from the last recorded proof (the list) while the head samples had kept the store proven fresh: proof period 122s; a peak is the staleness shown now",
		h: History{Seed: 426922, Duration: 3 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads: []Load{{Resource: "secrets", Start: 0, End: 3 * time.Minute, Rate: 0.05, Keys: 5}},
		},
	},
	{
		caught: "the checker: a relist right after an unseen restore of 5 seconds of a busy cluster came from a watch cache that swallowed the writes landing at or below its position; the store lacks them and no resource version can tell (staleness 0.4s with a write missing for 8s was no lie)",
		h: History{Seed: 416246, Duration: 9 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 9 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "restart", Start: 184 * time.Second, Dur: 5 * time.Second}, {Kind: "restore", Start: 199 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "the model's truth: a connection whose API server stopped was not marked disrupted (the scrapes before and after both saw its watch live, on two servers), so the backlog delivered on reconnecting, 807 revisions behind the head for a moment, failed 'lag while nothing missing' as if the watch had been live for minutes",
		h: History{Seed: 402985, Duration: 5 * time.Minute, Background: 100,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resWidgets}},
			Loads:  []Load{{Resource: "widgets.example.com", Start: 0, End: 5 * time.Minute, Rate: 0.5, Keys: 1}},
			Faults: []Fault{{Kind: "stuck", Start: 227 * time.Second, Dur: 2 * time.Minute, Resource: "widgets.example.com"}, {Kind: "restart", Start: 238 * time.Second, Dur: 5 * time.Second}},
		},
	},
	{
		caught: "a restore under a stuck watch cache: another source's lower sample settled the reference's held ones, and the new history began at that source's 220000 (a cache of the lost history) above the reference's 189000, whose next samples counted a second restore; the new history begins at the reference's sample now",
		h: History{Seed: 401432, Duration: 5 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets}},
			Faults: []Fault{{Kind: "stuck", Start: 190 * time.Second, Dur: 6 * time.Minute, Resource: "configmaps"}, {Kind: "restore", Start: 224 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "a restore, then the canary's CRD deleted: a resource's watch cache frozen in the lost history answered its freshness reads above the new history, the resource was split off as reading another etcd, and its new space proved its never-relisted store fresh (staleness 4s, 762 changes missing for 158s); a split keeps an informer's debt to a restore now",
		h: History{Seed: 400894, Duration: 7 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resDeploys}},
			Loads:  []Load{{Resource: "deployments.apps", Start: 0, End: 7 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 217 * time.Second, Dur: 20 * time.Second, Back: 50000}, {Kind: "delete-crd", Start: 221 * time.Second, Dur: 10 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		caught: "freshness reads off: an API server restart moved a quiet watch to the other server, its reopened watch got its cadence anew, so the 90s silence across the restart never counted as a stall, and its sawtooth taught the proof period 92s; a sawtooth across a reopen teaches nothing now",
		h: History{Seed: 204498, Duration: 9 * time.Minute, Background: 10,
			Setup: Setup{Servers: 2, NoFreshnessReads: true, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resDeploys}},
			Faults: []Fault{{Kind: "restart", Start: 210 * time.Second, Dur: 30 * time.Second}},
		},
	},
	{
		caught: "the model: writers kept writing to etcd while every API server was down (a restore with the servers restarted), so the new history overtook the 100 lost revisions unseen and the store kept their reverts missing with staleness 10s; writers write through an API server now, nothing while none serves",
		h: History{Seed: 204104, Duration: 8 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 8 * time.Minute, Rate: 5, Keys: 1}, {Resource: "secrets", Start: 0, End: 8 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 191 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}},
		},
	},
	{
		caught: "two restores 23s apart and no relist between: after the second, what the first's epoch proved counted, though the store held the first lost history's objects all along (staleness 30s with reverts missing for 49s); an epoch's proofs count after the next restore only if the store listed in it now",
		h: History{Seed: 201873, Duration: 9 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 9 * time.Minute, Rate: 5, Keys: 1}, {Resource: "widgets.example.com", Start: 0, End: 9 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 191 * time.Second, Dur: 20 * time.Second, Back: 100}, {Kind: "restore", Start: 214 * time.Second, Dur: 20 * time.Second, Back: 100}},
		},
	},
	{
		caught: "the model: a watch cache that ran through a restore and then followed etcd again still held the lost history's objects, which the truth did not say; a relist from it (no canary: unseen) failed 'staleness below the truth' 2 minutes later (the truth says CachesTainted now; the checker records lists as a step of Check)",
		h: History{Seed: 6106, Duration: 31 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resDeploys}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 31 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "delete-crd", Start: 554 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}, {Kind: "restore", Start: 626 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "a relist after an API server restart served by a stuck watch cache (not a consistent read) left the store 160 revisions behind the head, and the lag read 0: a list is a delivery, measured against the head like an event now",
		h: History{Seed: 108434, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resEvents}},
			Loads:  []Load{{Resource: "events", Start: 0, End: 6 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 184 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}, {Kind: "stuck", Start: 233 * time.Second, Dur: 6 * time.Minute, Resource: "events"}},
		},
	},
	{
		caught: "the checker: etcd restored while its API server was down for 2 minutes is unknowable until the server is back and the canary writes again (it counted from the restore: lag 0 with the revert missing, 7s after the server came back, was no lie)",
		h: History{Seed: 103835, Duration: 6 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets}},
			Faults: []Fault{{Kind: "restart", Start: 218 * time.Second, Dur: 2 * time.Minute}, {Kind: "restore", Start: 222 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "the checker: a restore of 100 revisions without a canary is unseen, and what it reverted in a store is missing with its RV at the head; the staleness invariant allowed for that, the lag one did not (lag 0 with 6 reverts missing for 87s was no lie)",
		h: History{Seed: 106368, Duration: 5 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 5 * time.Minute, Rate: 0.5, Keys: 20}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 5 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restart", Start: 182 * time.Second, Dur: 5 * time.Second}, {Kind: "restore", Start: 198 * time.Second, Dur: 20 * time.Second, Back: 100}},
		},
	},
	{
		caught: "a watch reopened after an API server restart ended with 410, and the relist hung on a frozen connection: the expiry's silence ended when the relist began, the reopened watch's cadence ran anew, and the lag read 0 with changes missing for 76s; a relist after a 410 is silent until it completes now",
		h: History{Seed: 103748, Duration: 5 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resWidgets}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 5 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "delete-crd", Start: 188 * time.Second, Dur: 45 * time.Second, Resource: "widgets.example.com"}, {Kind: "restart", Start: 201 * time.Second, Dur: 30 * time.Second}, {Kind: "freeze", Start: 237 * time.Second, Dur: 6 * time.Minute, Host: "informers"}},
		},
	},
	{
		caught: "a store that never relisted after a restore was bounded by the lost history's latest write only while that write was in the ring of the latest 32: 320s after the restore it was proven fresh up to 5s after the restore (staleness 357s, changes missing for 366s); ended epochs keep their latest write now",
		h: History{Seed: 108111, Duration: 10 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps}},
			Faults: []Fault{{Kind: "restore", Start: 189 * time.Second, Dur: 20 * time.Second, Back: 5000}, {Kind: "restart", Start: 231 * time.Second, Dur: 30 * time.Second}},
		},
	},
	{
		caught: "a relist during a restore's loss from the watch cache of the lost history (its API server not restarted) counted once the loss ended, when that cache followed etcd past the lost revisions: staleness 2s, lag 0, 22 changes missing for 339s; a list a later write landed below never counts now",
		h: History{Seed: 111690, Duration: 10 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 10 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "restart", Start: 182 * time.Second, Dur: 30 * time.Second}, {Kind: "restore", Start: 231 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "the checker: a restore under a canary on a slow connection (20s) is unknowable for two of its round trips (the write in flight at the restore, then the next), not one; staleness 4s while the revert was missed for 31s was no lie",
		h: History{Seed: 113326, Duration: 4 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps}},
			Faults: []Fault{{Kind: "slow", Start: 183 * time.Second, Dur: 6 * time.Minute, Host: "canary", Latency: 20 * time.Second}, {Kind: "restore", Start: 194 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "etcd restored while the head probe hung, its API servers restarted: the first sample after saw less than the store's RV of the lost history and proved it fresh (staleness 3s, 4 changes missing for 26s); a sample asked for after an RV arrived that saw less proves nothing now",
		h: History{Seed: 113802, Duration: 5 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps}},
			Faults: []Fault{{Kind: "hang", Start: 191 * time.Second, Dur: 45 * time.Second, Host: "probe"}, {Kind: "slow", Start: 209 * time.Second, Dur: 2 * time.Minute, Host: "canary", Latency: 20 * time.Second}, {Kind: "restore", Start: 229 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		caught: "a sparse resource on a busy cluster kept the largest lag of any delivery until a proof, and none came between deliveries: lag 756 for good (a newer head sample now measures the store anew)",
		h: History{Seed: 5059, Duration: 34 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 34 * time.Minute, Rate: 5, Keys: 20}, {Resource: "secrets", Start: 0, End: 34 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "restore", Start: 447 * time.Second, Dur: 20 * time.Second, Back: 50000}, {Kind: "stuck", Start: 861 * time.Second, Dur: 6 * time.Minute, Resource: "secrets"}},
		},
	},
	{
		caught: "a slow connection made a quiet watch look stalled; once bookmarks proved the store caught up, the stall still held the lag at head - RV (a prompt proof after the stall now settles it)",
		h: History{Seed: 5153, Duration: 30 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resWidgets, resDeploys, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 30 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "secrets", Start: 0, End: 30 * time.Minute, Rate: 5, Keys: 20}, {Resource: "deployments.apps", Start: 0, End: 30 * time.Minute, Rate: 5, Keys: 20}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 30 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "slow", Start: 1404 * time.Second, Dur: 45 * time.Second, Host: "informers", Latency: 20 * time.Second}},
		},
	},
	{
		caught: "a watch without bookmarks, frozen 6 minutes, reopened from its RV: the stall held the lag at head - RV until the next list (the first watch opened after a stall now settles it)",
		h: History{Seed: 5180, Duration: 35 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resEvents, resMetrics, resNoBookmark}},
			Loads:  []Load{{Resource: "events", Start: 0, End: 35 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 1298 * time.Second, Dur: 6 * time.Minute, Host: "informers"}, {Kind: "slow-server", Start: 1668 * time.Second, Dur: 45 * time.Second, Latency: 200 * time.Millisecond}},
		},
	},
	{
		caught: "etcd restored to its first revision while no write had landed at or above the informer RV: the restore went unseen and staleness claimed freshness after it (the latest write before the lost one now bounds what the old history proved)",
		h: History{Seed: 5280, Duration: 32 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resMetrics}},
			Loads:  []Load{{Resource: "samples.metrics.example.io", Start: 0, End: 32 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "restore", Start: 1248 * time.Second, Dur: 20 * time.Second, Back: 50000}},
		},
	},
	{
		caught: "a canary write on a slow connection answered after the deletion of its object (the CRD deleted) was delivered: the deletion's higher RV counted a restore (only what was delivered before a write was sent bounds it now)",
		h: History{Seed: 5033, Duration: 28 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 28 * time.Minute, Rate: 0.5, Keys: 1}},
			Faults: []Fault{{Kind: "slow", Start: 4 * time.Minute, Dur: 15 * time.Minute, Host: "canary", Latency: 20 * time.Second}, {Kind: "delete-crd", Start: 710 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "restore", Start: 1365 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		caught: "a 503 of an API server restarting after a deleted CRD's 404 made the resource served again: its silence exported a stall (only a list that succeeds does now)",
		h: History{Seed: 5202, Duration: 21 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{},
			Faults: []Fault{{Kind: "delete-crd", Start: 591 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}, {Kind: "restore", Start: 616 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}, {Kind: "restart", Start: 756 * time.Second, Dur: 30 * time.Second}},
		},
	},
	{
		caught: "after a restore, a write of the new history landing above the informer's old RV made the lost history look shared until then: freshness was not withdrawn (writes judge only their own epoch now)",
		h: History{Seed: 5760, Duration: 21 * time.Minute, Background: 100,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 21 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "freeze", Start: 399 * time.Second, Dur: 6 * time.Minute, Host: "probe"}, {Kind: "restore", Start: 546 * time.Second, Dur: 20 * time.Second, Back: 100}, {Kind: "restore", Start: 957 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "a restore under two API servers, one restarted: a relist from the other's cache of the lost history proved freshness while writes still landed below the reads (such lists prove nothing now)",
		h: History{Seed: 5594, Duration: 31 * time.Minute, Background: 0,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resSecrets, resDeploys, resMetrics}},
			Loads:  []Load{{Resource: "secrets", Start: 0, End: 31 * time.Minute, Rate: 5, Keys: 20}, {Resource: "deployments.apps", Start: 0, End: 31 * time.Minute, Rate: 0.05, Keys: 1}},
			Faults: []Fault{{Kind: "restore", Start: 236 * time.Second, Dur: 20 * time.Second, Back: 5000}, {Kind: "restart", Start: 617 * time.Second, Dur: 2 * time.Minute}},
		},
	},
	{
		caught: "the model delivered a restarting API server's reset through a frozen (half-open) connection: the watch reopened at once and the stall went unseen for a bookmark period (a half-open connection now swallows the reset, as TCP does)",
		h: History{Seed: 42, Duration: 9 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps, resDeploys, resEvents}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 9 * time.Minute, Rate: 5, Keys: 5}, {Resource: "deployments.apps", Start: 0, End: 9 * time.Minute, Rate: 0.5, Keys: 5}, {Resource: "events", Start: 0, End: 9 * time.Minute, Rate: 0.5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 208 * time.Second, Dur: 15 * time.Minute, Host: "informers", Reset: true}, {Kind: "restart", Start: 235 * time.Second, Dur: 5 * time.Second}},
		},
	},
	{
		caught: "the checker asked for a stuck cache's lag before the watch reopened onto it had its first bookmark due (a watch reopened on a disrupted path gets its cadence anew)",
		h: History{Seed: 570, Duration: 5 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resDeploys, resEvents}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 5 * time.Minute, Rate: 5, Keys: 1}, {Resource: "deployments.apps", Start: 0, End: 5 * time.Minute, Rate: 5, Keys: 5}, {Resource: "events", Start: 0, End: 5 * time.Minute, Rate: 0.05, Keys: 20}},
			Faults: []Fault{{Kind: "stuck", Start: 184 * time.Second, Dur: 15 * time.Minute, Resource: "events"}, {Kind: "freeze", Start: 217 * time.Second, Dur: 10 * time.Second, Host: "informers", Reset: true}},
		},
	},
	{
		caught: "a watch reopened after its API server restarted had its first bookmark a minute later, beyond the cadence counted from the last one: a stall seen, RV lag 550-770 held on a quiet resource nothing was missing from (a watch reopened within its cadence now gets a cadence anew)",
		h: History{Seed: 17, Duration: 9 * time.Minute, Background: 10,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resWidgets}},
			Loads:  []Load{{Resource: "widgets.example.com", Start: 0, End: 9 * time.Minute, Rate: 5, Keys: 1}},
			Faults: []Fault{{Kind: "hang", Start: 187 * time.Second, Dur: 10 * time.Second, Host: "probe"}, {Kind: "restart", Start: 218 * time.Second, Dur: 5 * time.Second}},
		},
	},
	{
		caught: "a relist taken while canary writes still landed below the reads (a restore with the API servers restarted) never counted: state ahead_of_head and staleness growing for as long as the watch lived (it counts once a write lands above the reads); failed only in some runs before the bubble ran on one processor",
		h: History{Seed: 632, Duration: 9 * time.Minute, Background: 100,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{resConfigMaps, resDeploys}},
			Faults: []Fault{{Kind: "restart", Start: 191 * time.Second, Dur: 30 * time.Second}, {Kind: "restore", Start: 201 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 5000}, {Kind: "delete-crd", Start: 224 * time.Second, Dur: 10 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		caught: "a store that listed during a loss (a restore with the API server restarted, the informers frozen across it) and applied events before the loss ended was tainted by moving on from its unjudged list RV, and stayed ahead of the head for good: staleness 180 s above the truth and growing (seeds 49788, 57610, 75776 and 45856 of the 100,000 run; TestAnEventDuringALossDoesNotTaintItsList)",
		h: History{Seed: 57610, Duration: 7 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{resConfigMaps}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 7 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "freeze", Start: 211 * time.Second, Dur: 45 * time.Second, Host: "informers"}, {Kind: "restore", Start: 229 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}},
		},
	},
	{
		caught: "an idle resource at RV lag 1 after its initial list: its lag was measured against the head answered before the list ended, and a head probe answered a canary write while the list was in flight (CI's TestHABusyCluster saw it behind a balancer, fixed in 56fe2c5 by measuring against the head known when the list began; found again on that code with the sharp idle-lag oracle and lists that take up to 2 s, seed 500012 of a 1,500-history run, 4 of them failing, shrunk)",
		h: History{Seed: 500012, Duration: 1 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}}, ListLatency: 2 * time.Second,
				Resources: []Watched{resConfigMaps, resWidgets}},
		},
	},
	{
		caught: "issue #39's premise 1, a request on the informer's own client config reaches the API server of its watch: clients on HTTP/1.1 behind a balancer of 3 API servers, an idle resource on etcd's 10-minute progress interval, 5 writes/s elsewhere: RV lag above 500 while nothing is missing (its freshness reads reach other servers than its watch, and a bookmark below a read's head is taken for a cache that did not catch up); found by -sim.widen=http1 on seeds 1-600 (3 of 600), seed 4 shrunk; now an answer over HTTP/1.1 on the informer's connection makes its reads not its own (informer.observeProto), and with several API servers the healthy sawtooth has no bound (sawtoothBounded)",
		h: History{Seed: 4, Duration: 4 * time.Minute, Background: 100,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, HTTP1: true,
				Resources: []Watched{resConfigMaps, resSecrets}},
			Loads: []Load{{Resource: "configmaps", Start: 0, End: 4 * time.Minute, Rate: 5, Keys: 1}},
		},
	},
	{
		caught: "issue #39's premise 2, the RV space's reference resource lives on the etcd the canary writes to: events on an etcd of their own (revision 10,000,000) listed first, configmaps second, no `space:`: a regression counted at start with no restore (the reference read the events etcd, and the main etcd's heads and writes below it looked like a restore); found by -sim.widen=order on seeds 1-600 (17 of 600), seed 46 shrunk to one minute; now the canary's resource anchors its space's head (proof.Space.Anchor)",
		h: History{Seed: 46, Duration: 1 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0x989680, ProgressNotify: 0}},
				Resources: []Watched{{ResourceSpec: resEvents.ResourceSpec}, resConfigMaps}},
		},
	},
	{
		caught: "issue #39's premise 2, no canary: events on an etcd of their own listed first (the reference), configmaps of the main etcd above it: configmaps' freshness reads and another resource's answered together above the reference, and a contradiction was counted only for one source alone above, so configmaps stayed in the events' space, ahead_of_head and 135 s stale while nothing was missing; found by -sim.widen=order on seeds 1-300 (seed 65), shrunk; now every source that answered above is contradicted (proof.Space.above)",
		h: History{Seed: 65, Duration: 3 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0xa, ProgressNotify: 0}}, DispatchLag: 1 * time.Second,
				Resources: []Watched{{ResourceSpec: resEvents.ResourceSpec}, {ResourceSpec: resConfigMaps.ResourceSpec}}},
			Loads: []Load{{Resource: "configmaps", Start: 0, End: 3 * time.Minute, Rate: 5, Keys: 1}},
		},
	},
	{
		caught: "issue #39's premise 2, no canary: configmaps listed first, events on an etcd of their own: the events' freshness reads go out in the same round as the others' and always answered after a higher one, so they were dropped as older snapshots and events stayed in the cluster's space, RV lag 1058 and 135 s stale while nothing was missing; found by -sim.widen=order on seeds 1-300 (seed 30), shrunk; now a read below a head the reference had answered before it was sent is held as a lower sample (proof.Space.holdLow)",
		h: History{Seed: 30, Duration: 3 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}, {Name: "events", Revision: 0xa, ProgressNotify: 0}}, DispatchLag: 1 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec}, {ResourceSpec: resEvents.ResourceSpec}}},
			Loads: []Load{{Resource: "events", Start: 0, End: 3 * time.Minute, Rate: 0.5, Keys: 5}},
		},
	},
	{
		caught: "issue #39's premise 2, no canary: events listed first on an idle etcd of their own (no writes, progress notify 10 min), configmaps of the main etcd above it: the reference never moved, and only its moving on counted a second contradiction, so configmaps stayed in the events' space, 135 s stale while nothing was missing; found by -sim.widen=order on seeds 1-300 (seed 99), shrunk; now a source's own samples moving on above the reference count too (frozen caches move neither)",
		h: History{Seed: 99, Duration: 3 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}}, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resEvents.ResourceSpec}, {ResourceSpec: resConfigMaps.ResourceSpec}}},
			Loads: []Load{{Resource: "configmaps", Start: 0, End: 3 * time.Minute, Rate: 0.05, Keys: 1}},
		},
	},
	{
		caught: "issue #39's premise 5, the library runs as the exporter runs it: a monitor whose Start never runs (registered, never added to a manager): the queue of a quiet resource grows by one per bookmark and list end, nothing draining it (a false backpressure signal); found by -sim.widen=nostart on seeds 1-600 (3 of 600), seed 58 shrunk; now every scrape drains what the store applied, beside the scrape (Monitor.snapshots; TestBookmarksDrainWithoutTheTicker)",
		h: History{Seed: 58, Duration: 5 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, NoStart: true,
				Resources: []Watched{resConfigMaps, resDeploys}},
		},
	},
	{
		caught: "issue #39's premise 5 again: a monitor whose Start never runs, without a canary, has no head probe and no freshness read, so nothing ever answers for the head and its resources say head_unknown for good; the oracle called that not recovered 5 min after a fault (found by -sim.widen=http1,informers,nostart on seeds 1-600, seed 212 shrunk); head_unknown is the honest state of such a world (stateExpected)",
		h: History{Seed: 212, Duration: 10 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, NoStart: true, HTTP1: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl", Embedded: true}}}}},
			Faults: []Fault{{Kind: "slow-server", Start: 201 * time.Second, Dur: 45 * time.Second, Latency: 200 * time.Millisecond}},
		},
	},
	{
		caught: "issue #39's premise 1 at length: three API servers, clients on HTTP/1.1, etcd's 10-minute progress notify, an idle resource; a server restarts, then the informers' connection freezes for 2 min: after it, RV lag 1,889-2,324 on the idle resource while its store misses nothing (found by -sim.widen=http1,informers,nostart on seeds 1-600 of up to 40 min, seed 349, shrunk): the stall kept its lag, head minus RV, until a prompt proof that the store caught up, which never comes where no read moves the watch's cache; now a bookmark the store applies after the stall settles it (Proof.settledAt)",
		h: History{Seed: 349, Duration: 23 * time.Minute, Background: 10,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, HTTP1: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "restart", Start: 955 * time.Second, Dur: 5 * time.Second, Server: 2}, {Kind: "freeze", Start: 1081 * time.Second, Dur: 2 * time.Minute, Host: "informers"}},
		},
	},
	{
		caught: "issue #39's premise 1 on one API server: clients on HTTP/1.1 (so the monitor learns the proof period from the sawtooth), etcd's 10-minute progress notify, idle secrets; the informers' connection hangs 45 s and the freshness reads with it, so the watch cache does not move and the sawtooth across the hang peaks at 116 s, which was learned as healthy: proof period 116 s 5 min after the fault (found by -sim.widen=http1,informers,nostart on seeds 1-600 of up to 40 min, seed 123, shrunk); now a sawtooth across a failed freshness read is no healthy peak (Proof.prove)",
		h: History{Seed: 123, Duration: 27 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second, HTTP1: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl", Embedded: true}}}, {ResourceSpec: resSecrets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "hang", Start: 1249 * time.Second, Dur: 45 * time.Second, Host: "informers"}},
		},
	},
	{
		caught: "issue #39's premise 1 (a read on the informer's connection reaches its watch's server): three API servers, clients on HTTP/1.1, an etcd without progress notifications, widgets idle; its CRD deleted and re-created: the relist came from a watch cache that never moves (no read reaches it, no progress notify) 2,302 revisions below the head of the writes elsewhere, and that lag stood for good on a store missing nothing (found by -sim.widen=http1,informers,nostart on seeds 900001-905000, seed 900079, shrunk); now a list below the head without reads of the informer's own is lag unknown until a delivery or a prompt proof (Proof.lagUnsure)",
		h: History{Seed: 900079, Duration: 29 * time.Minute, Background: 100,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}}, HTTP1: true,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "delete-crd", Start: 1416 * time.Second, Dur: 2 * time.Minute, Resource: "widgets.example.com"}},
		},
	},
	{
		caught: "freshness reads off, etcd's 10-minute progress notify, widgets idle, the API server restarted: the relist after it, one revision below the head (the canary's write), was settled by the next bookmark at the head, and came back as RV lag 1 minutes later whenever the latest bookmark proved only an old instant: lag while idle (found by -sim.widen=http1,informers,nostart on seeds 900001-905000, seed 903042, shrunk); now such a list is lag unknown without reads of the informer's own (Proof.lagUnsure), and a lag a prompt proof settled stays settled where reads are on (Proof.settleLag, TestASettledLagStaysSettled)",
		h: History{Seed: 903042, Duration: 11 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: true, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "restart", Start: 384 * time.Second, Dur: 5 * time.Second}},
		},
	},
	{
		caught: "issue #39's premise 3 (a fact about one informer is one about the resource): two API servers, etcd's 10-minute progress notify, idle configmaps, an operator's informer beside the exporter's: its freshness reads rode the head probe's connection, which held the other server, so its own server's watch cache never caught up and its staleness grew to the progress interval, 94.9 s with nothing missing (found by -sim.widen=http1,informers,nostart on seeds 900001-902000, seed 900229, shrunk); now an informer of your own reads through its own ListerWatcher (Monitor.Instrument, listerHead)",
		h: History{Seed: 900229, Duration: 12 * time.Minute, Background: 10,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}}, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl", Embedded: true}}}}},
		},
	},
	{
		caught: "issue #39's premise 3 again, without progress notifications: two API servers, configmaps written every 20 s, an operator's informer beside the exporter's: its server's watch cache moved only with configmaps' own writes, its bookmarks trailed the head of the writes elsewhere, and it showed RV lag 1,556-2,083 with nothing missing (760-1,080 in the shrunk history; found by -sim.widen=http1,informers,nostart on seeds 900001-902000, seed 901189, shrunk); fixed with seed 900229 (its reads through its own ListerWatcher)",
		h: History{Seed: 901189, Duration: 32 * time.Minute, Background: 10,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl", Embedded: true}}}, {ResourceSpec: resSecrets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Loads: []Load{{Resource: "configmaps", Start: 0, End: 32 * time.Minute, Rate: 0.05, Keys: 5}},
		},
	},
	{
		caught: "issue #39's premise 4 (a cache holds every object of its resource): an operator's informer of configmaps scoped to a namespace nothing is written to (controller-runtime's DefaultNamespaces) beside the exporter's, the canary writing configmaps in its own namespace: the scoped informer never delivers a canary write, and whenever its latest bookmark was older than the canary's deadline for one, the write counted as overdue and its RV lag read head minus RV, 643 with nothing missing (found by -sim.widen=scopes on seeds 1-600, seed 1, shrunk); now only an informer whose scope holds the canary object (a list held it, or it delivered a canary event) is held to the canary's writes (informer.seesCanary; TestACanaryWriteOutsideAnInformersScopeIsNotOverdue)",
		h: History{Seed: 1, Duration: 16 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 0}},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-quiet", Embedded: true, Namespace: "quiet"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resDeploys.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resMetrics.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
		},
	},
	{
		caught: "a stuck watch cache beside an operator's informer scoped to an empty namespace: the informer cannot tell the stuck cache's bookmarks at its old RV from a quiet cache's (its reads are not known to reach its server) and learned the stuck sawtooth, 174 s, as its proof period for 30 min (found by -sim.widen=scopes on seeds 1-600, seed 14; also seeds 29, 61, and 900331 of the informers dimension); no client could tell: waived and stated (stuckLearned), kept so the waiver stays exact",
		h: History{Seed: 14, Duration: 37 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{}, {Host: "ctrl-quiet", Embedded: true, Namespace: "quiet"}}}, resWidgets}},
			Loads:  []Load{{Resource: "widgets.example.com", Start: 0, End: 37 * time.Minute, Rate: 0.05, Keys: 5}},
			Faults: []Fault{{Kind: "slow", Start: 192 * time.Second, Dur: 6 * time.Minute, Host: "probe", Latency: 20 * time.Second}, {Kind: "slow", Start: 838 * time.Second, Dur: 6 * time.Minute, Host: "probe", Latency: 2 * time.Second}, {Kind: "stuck", Start: 932 * time.Second, Dur: 2 * time.Minute, Resource: "configmaps"}},
		},
	},
	{
		caught: "scoped informers and a restore: widgets idle with an operator's informers scoped to the loads' namespace and the canary's, the main etcd restored 5,000 revisions back: widgets said head_unknown 5 min after the restore ended (found by -sim.widen=scopes on seeds 1-600, seed 461, shrunk; not triaged yet)",
		lie:    "widgets.example.com", lieRule: "not recovered",
		h: History{Seed: 461, Duration: 33 * time.Minute, Background: 10,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 5000000000}, {Name: "events", Revision: 0x989680, ProgressNotify: 5000000000}},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-ns", Embedded: true, Namespace: "ns"}, {Host: "ctrl-rvsync", Embedded: true, Namespace: "rvsync"}}}, {ResourceSpec: resEvents.ResourceSpec, Space: "events", Informers: []Informer{{Host: "informers"}, {Host: "ctrl-quiet", Embedded: true, Namespace: "quiet"}}}, {ResourceSpec: resMetrics.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 33 * time.Minute, Rate: 5, Keys: 5}, {Resource: "samples.metrics.example.io", Start: 0, End: 33 * time.Minute, Rate: 0.5, Keys: 5}},
			Faults: []Fault{{Kind: "restore", Start: 1596 * time.Second, Dur: 20 * time.Second, Back: 5000}},
		},
	},
	{
		caught: "an operator's informer of configmaps scoped to an empty namespace, two API servers, etcd's 10-minute progress notify, configmaps' resource gone for 45 s: the first sawtooth after its relist, 98 s (just above 80 s in the shrunk history), was learned as healthy (its reads are not known to reach its watch's server, so its proof period is learned; found by -sim.widen=scopes on seeds 1-600, seed 485, shrunk; not fixed yet)",
		lie:    "configmaps", lieRule: "proof period above the healthy sawtooth",
		h: History{Seed: 485, Duration: 23 * time.Minute, Background: 1000,
			Setup: Setup{Servers: 2, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, DispatchLag: 1 * time.Second, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}, {Host: "ctrl-quiet", Embedded: true, Namespace: "quiet"}}}, {ResourceSpec: resSecrets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resDeploys.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resNoBookmark.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "delete-crd", Start: 975 * time.Second, Dur: 45 * time.Second, Resource: "configmaps"}},
		},
	},
	{
		caught: "an etcd restore (100 back, Reset) while the canary froze and the informers slowed: the first head probe after it answered above the informer's old RV, nothing showed the loss, and staleness fell to 3-14s while the cache lacked new-history writes below its RV (found by make test-sim's seed range 200001 on 4 December, not fixed yet)",
		lie:    "configmaps", lieRule: "staleness below the truth",
		h: History{Seed: 225497, Duration: 10 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}, {Name: "events", Revision: 0xa, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resEvents, resNoBookmark}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 10 * time.Minute, Rate: 0.05, Keys: 5}, {Resource: "events", Start: 0, End: 10 * time.Minute, Rate: 0.05, Keys: 1}, {Resource: "gadgets.legacy.example.io", Start: 0, End: 10 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 193 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}, {Kind: "freeze", Start: 215 * time.Second, Dur: 45 * time.Second, Host: "canary"}, {Kind: "slow", Start: 217 * time.Second, Dur: 15 * time.Minute, Host: "informers", Latency: 200 * time.Millisecond}},
		},
	},
	{
		caught: "an etcd restore 100 revisions back while the canary's resource was gone: the head probe failed over to secrets, whose first answers were below the old reference's head but climbed past it within two samples, so the margin of settleAfter samples never settled a restore, and the watch resumed above the lost writes: staleness 3.6s while the cache lacked 9 changes, the oldest committed 44s before (found by make test-sim's seed range 200001 on 4 December; fixed: secrets had answered higher itself before, and one resource's consistent reads never go back within a history, Space.own)",
		h: History{Seed: 232487, Duration: 8 * time.Minute, Background: 0,
			Setup: Setup{Servers: 3, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{resConfigMaps, resSecrets, resDeploys}},
			Loads:  []Load{{Resource: "configmaps", Start: 0, End: 8 * time.Minute, Rate: 0.5, Keys: 20}, {Resource: "deployments.apps", Start: 0, End: 8 * time.Minute, Rate: 5, Keys: 20}},
			Faults: []Fault{{Kind: "restore", Start: 181 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 100}, {Kind: "delete-crd", Start: 200 * time.Second, Dur: 15 * time.Minute, Resource: "configmaps"}},
		},
	},
	{
		caught: "the exporter's informers frozen 6 min, etcd restored 50,000 revisions back meanwhile: the head probe counted the restore (13:45), then the informers' connection thawed and delivered the canary's events of the lost history, above every write of the new one; the canary's next write, below that sighting, counted the same restore again: 2 regressions for 1 restore (found by seeds 310001-313000 on 6 December, seed 312074, shrunk; fixed: a canary event whose heartbeat names a write sent before the loss was proven proves nothing of the new history, canaryState.since)",
		h: History{Seed: 312074, Duration: 18 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "configmaps", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}}, ListLatency: 2 * time.Second,
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resDeploys.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Faults: []Fault{{Kind: "freeze", Start: 662 * time.Second, Dur: 6 * time.Minute, Host: "informers"}, {Kind: "restore", Start: 802 * time.Second, Dur: 20 * time.Second, Reset: true, Back: 50000}},
		},
	},
	{
		caught: "no fault: widgets idle beside configmaps written once a minute on average, one API server, etcd's 10-minute progress notify, no canary: a configmaps write moved the head to 1050 while widgets' store held 1049 and missed nothing, and widgets showed RV lag 1 for the 45 s until its next freshness read; found by seeds 310001-313000 on 6 December, seed 312665, shrunk; not fixed yet. Why: the watch session opened at 1049 and etcd did not move, so no read could move its cache past the watch's start and the server skipped its bookmarks (as kube-apiserver does); with freshness reads on, Watch.Cadence expects one each period, so the watch counted as stalled from a minute after its last sign of life and the lag read head minus RV once the head moved. A fix: with reads, a session that has heard nothing is due a bookmark a period after the first read answered above the watch's start RV, not before (Watch needs the start RV and its reads' heads)",
		lie:    "widgets.example.com", lieRule: "lag while idle",
		h: History{Seed: 312665, Duration: 15 * time.Minute, Background: 0,
			Setup: Setup{Servers: 0, NoFreshnessReads: false, Canary: "", Etcds: []model.EtcdSpec{{Name: "main", Revision: 0x3e8, ProgressNotify: 600000000000}},
				Resources: []Watched{{ResourceSpec: resConfigMaps.ResourceSpec, Informers: []Informer{{Host: "informers"}}}, {ResourceSpec: resWidgets.ResourceSpec, Informers: []Informer{{Host: "informers"}}}}},
			Loads: []Load{{Resource: "configmaps", Start: 0, End: 15 * time.Minute, Rate: 0.05, Keys: 20}},
		},
	},
}

func TestCorpus(t *testing.T) {
	for _, c := range corpus {
		t.Run(fmt.Sprint(c.h.Seed), func(t *testing.T) {
			chk, err := RunHistory(t, c.h)
			if err != nil {
				t.Fatal(err)
			}
			reportViolations(t, chk.Violations, c.lie, c.lieRule, "once: "+c.caught)
		})
	}
}

// reportViolations fails t for every violation but those of rule (one, or
// several separated by "|") by the known lie's resource (or resources),
// which it logs;
// when a lie is known, it fails t too once none is left (the lie is fixed:
// drop it from the entry).
func reportViolations(t *testing.T, vs []Violation, lie, rule, context string) {
	t.Helper()
	known := 0
	rules, lies := strings.Split(rule, "|"), strings.Split(lie, "|")
	for _, v := range vs {
		if lie != "" && slices.Contains(lies, v.Resource) && slices.Contains(rules, v.Rule) {
			t.Logf("known, reported: %v", v)
			known++
			continue
		}
		t.Errorf("%v (%s)", v, context)
	}
	if lie != "" && known == 0 {
		t.Errorf("the known %s of %s is gone: drop the entry's lie", rule, lie)
	}
}
