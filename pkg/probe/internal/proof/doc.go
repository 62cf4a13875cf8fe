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
//
// The proofs rest on premises about the world; each is drawn by the
// simulation's model, detected at run time, or open (docs/simulation.md,
// "The premises", says which and how):
//   - a periodic bookmark may trail the revision a consistent read waited
//     for by the cacher's dispatch tick (DispatchSlack);
//   - a List takes time: its lag is measured against the head known when
//     it began (ApplyList);
//   - the API server ends a watch its timeout after it started it, and
//     sends a bookmark 2s before: package probe counts the timeout from
//     when the watch's answer came back, the latest the server can have
//     started it (a request a frozen connection held for minutes reaches
//     the server that late);
//   - in one history a write commits above everything observed before it
//     was sent, so one that lands below a store's RV is of another history
//     (Space.FirstWriteBelow, SameHistoryAt);
//   - a list taken while writes land below the reads is of etcd's new
//     history when no write after it lands below its RV: detected where it
//     is not for a list at the RV the lost history's reads stand at (a
//     watch cache frozen there answers at it, and follows on from it once
//     etcd passes it: Space.ListedLost); a list from such a cache after
//     the loss ended is a stated limit (nothing tells it from a restarted
//     server's);
//   - a consistent read on an informer's own connection reaches the API
//     server of its watch (Env.OwnReads): detected, HTTP/1.1 pools read
//     elsewhere, and their informers learn their proof period instead;
//   - the reference of an RV space reads the etcd the canary writes to:
//     detected (Space.Anchor, the first canary's resource where several
//     write, and a space's sources unsettled until the reference confirms
//     or contradicts them, a canary's writes judged only once its
//     resource is settled, the canary's anchor settled still when the
//     reference fails over from it and never contradicted, and no
//     contradiction counted while a write shows the reads to be of a lost
//     history, whose frozen caches contradict each other; a restore drops
//     the canaries' pending writes of the lost history); a resource found
//     to read another etcd moves to the first space learnt that way whose
//     reference it does not contradict, or one of its own (package
//     probe: resources of one other etcd share its restores), and a
//     source contradicted once and never confirmed never takes over the
//     head when the reference fails (Space.successor), where its stores
//     stand listed as of their lists, so that a restore of that etcd
//     finds them unlisted since (Proof.Reset);
//   - every informer of a resource holds all its objects, and a fact
//     about one informer is one about the resource: detected, as Overdue
//     (package probe holds an informer to the canary's writes only once
//     its scope is seen to hold the canary object, to a change a
//     sibling informer delivered of an object it holds as an event, and
//     to any such change as a bookmark: Watch.Unmet), and as
//     Env.Incident (a sawtooth across an incident on a sibling's path,
//     which may have stopped the reads that move a shared watch cache,
//     teaches the proof period nothing), and package probe reports a
//     resource's watch silence with the bookmark period of the same
//     informer, the most overdue; scoped, selected, typed and restarted
//     informers are drawn by the simulation;
//   - a store's staleness is judged by the head probe's reads: detected
//     where it is not (the head probe's server cut off or refused while
//     the canary's writes land elsewhere): package probe takes the
//     canary's writes, once the head was read and while they answer, as
//     heads of their resource (Proof.Canary), and reports no lag then;
//   - the monitor's Start drains the stores: detected (a scrape drains
//     them too); where nothing ever reads the head, the writes alone end
//     a loss they proved (Space.Write).
//
// Its tolerances (how late a bookmark may come, how many samples make a
// restore, how long a peak counts) are named constants, each listed in
// docs/simulation.md, "The proof's tolerances", with the kube-apiserver,
// etcd or client-go behaviour it derives from and the tests that pin it;
// TestTolerancesDocumented keeps the table and the constants in step.
package proof
