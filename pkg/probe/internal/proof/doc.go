// Package proof holds what pkg/probe proves, as pure functions of what it
// observed: resource-version arithmetic, the head timeline of an RV space
// and the settlement of its sources (one etcd or several, restores,
// foreign resources), the queue between an informer's watch and its
// store, a watch's liveness (its bookmark cadence, its silence) and an
// informer's proofs (freshness, the freshness proof period, RV lag).
//
// Nothing here starts a goroutine, reads a clock, takes a lock or knows a
// client type: every function takes the times it needs and returns what
// follows, so each proof can be tested on a scripted history and read
// without its surroundings. Callers (package probe) serialize access.
package proof
