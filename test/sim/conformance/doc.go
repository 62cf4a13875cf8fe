// Package conformance checks the simulation's model control plane (package
// model) against the real thing: the same scripted histories (Scripts:
// writes, idle periods, watches with and without bookmarks, watch
// timeouts, a watch-list, paged and versioned Lists, an API-server
// restart, a 410, an etcd restore with and without the API server
// restarted) run against the model and against a real kube-apiserver and
// etcd, and what a client observes of each is compared.
//
// A client's observations (Record) are the answers to its requests (each
// write, each List page with its items and resource version, each error
// with its HTTP code and reason) and everything each watch delivers, in
// order (events, bookmarks, the initial-events-end bookmark, errors, the
// end of the stream). Resource versions are named after the script's
// writes (w3, or w3+ when revisions nobody scripted lie between, such as
// the API server's own lease renewals), so two control planes that number
// their revisions apart compare; a revision is never compared as a number.
//
// Compare says where the model differs: per stream (each watch, and the
// answers to requests), the same observations in the same order, in the
// same step of the script, and
//   - an event, a write's or a List's answer, or an error within
//     EventTolerance (1.5s) of the real one, measured from the step it came
//     in (a retried request: a tenth of how long the real one took, if
//     more);
//   - a bookmark, or the end of a watch, within BookmarkTolerance (3s)
//     after its watch opened: the cacher dispatches bookmarks on a 1s
//     ticker with jitter, and the real server's steps take time the model's
//     do not;
//   - a bookmark's or a List's resource version may differ in its "+"
//     alone (whether a lease renewal landed first is the real server's
//     timing), and a bookmark repeated within the cacher's dispatch tick is
//     skipped, as is one that echoes a watch-list's initial-events-end
//     bookmark at the next tick (the cacher sends bookmarks at once until
//     the watcher confirms that one);
//   - around a restart or a restore, which the model takes at once and the
//     real control plane in seconds, only the step is compared, not the
//     time.
//
// TestConformance (real_test.go, built with the integration tag: make test,
// or go test -tags integration -run TestConformance .) runs every script on
// a real control plane and on the model; with -update it rewrites
// testdata/*.real, the recordings TestModelMatchesRecording compares the
// model with in the fast tier. Where they differ, the model is fixed: it is
// the model that must follow the real server.
package conformance
