// Package model is a model of a Kubernetes control plane for the
// simulation (package sim): etcd keyspaces with revisions, histories,
// progress notifications, compaction and restores from a backup;
// kube-apiservers with a watch cache per resource (its resource version
// moving with events and progress notifications, consistent reads that
// make it catch up, bookmarks about once a minute and before a watch's
// timeout, watch timeouts, 410 for a watch older than its window, streaming
// watch-lists ending in the initial-events-end bookmark); a load balancer
// that pins each client connection to one API server; and faults
// (half-open connections, slow responses, refused or hanging requests, a
// stuck watch cache, restarts, restores, a resource deleted and re-created).
//
// Clients reach it over HTTP through Transport, an http.RoundTripper that
// serves the subset of the Kubernetes API that client-go's metadata and
// dynamic clients use (List, Watch, Get, merge Patch, Create, as JSON), so
// the code under test runs its real clients and informers against it.
//
// The model keeps what no client can see: the ground truth. Every write has
// a commit time and a history epoch; a restore marks the writes after the
// restored revision lost. The simulation compares what the exporter says
// with it.
//
// Time is the caller's: every entry point reads time.Now, which the
// simulation runs inside a testing/synctest bubble, so hours pass in
// milliseconds and only when every goroutine waits. Scheduled work (writes
// of the workload, bookmarks, progress notifications, watch timeouts,
// faults) runs when Advance is called at or after its time; the model's own
// randomness comes from its seed.
package model
