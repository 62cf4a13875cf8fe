package conformance

import (
	"fmt"
	"strings"
	"time"
)

// Op is what a step of a script does.
type Op string

// The steps a script is made of.
const (
	// Create, Update and Delete write the ConfigMap Name of the script's
	// namespace; each write is the script's next write, w1, w2, ... (its
	// object carries the label in an annotation, so every event and list
	// item names the write it shows).
	Create Op = "create"
	Update Op = "update"
	Delete Op = "delete"
	// Fill writes a ConfigMap of another namespace, which no watch of the
	// script sees, Count times; or, with a mark From, until etcd's revision
	// passes it, then Count more (the writes after it land above the
	// revisions a restore lost).
	Fill Op = "fill"
	// Idle waits Dur; with Name, until the watch Name has been open Dur
	// (what it shows then does not hang on how long the steps before
	// took on a loaded machine).
	Idle Op = "idle"
	// Watch opens the watch Name on the script's namespace from the
	// resourceVersion From ("" or "0" as written, else a mark), with
	// bookmarks if Bookmarks, as a watch-list if Initial, for Timeout
	// seconds if not 0. Everything it delivers is observed until it ends
	// or Stop.
	Watch Op = "watch"
	// Stop closes the watch Name from the client's side.
	Stop Op = "stop"
	// List lists the script's namespace from the resourceVersion From, in
	// pages of Limit if not 0; Mark names the list's resource version.
	List Op = "list"
	// Restart restarts the API server on the same etcd.
	Restart Op = "restart"
	// Snapshot copies etcd's data, for Restore.
	Snapshot Op = "snapshot"
	// Restore restores etcd from the snapshot, with the API server
	// restarted (Restart) or left running on it.
	Restore Op = "restore"
	// Freeze stalls the client's connections, present and future: open,
	// forwarding nothing (a fault proxy's Stall; the model's Freeze of
	// the client's host); Thaw ends it.
	Freeze Op = "freeze"
	Thaw   Op = "thaw"
)

// Step is one step of a script.
type Step struct {
	Op Op
	// Name is the object a write writes, or the watch a Watch, Stop or
	// Idle names.
	Name string
	// From is a resourceVersion: "" and "0" as the API reads them, or a
	// mark (a write's label, w3, or a list's Mark).
	From string
	// Mark names the resource version a List answered.
	Mark string
	// Dur is how long an Idle waits.
	Dur time.Duration
	// Limit is a List's page size (0: one page).
	Limit int64
	// Timeout is a Watch's timeoutSeconds (0: the server's default).
	Timeout int64
	// Count is how many writes a Fill makes.
	Count int
	// Bookmarks asks a Watch for bookmarks; Initial makes it a watch-list
	// (sendInitialEvents, resourceVersionMatch NotOlderThan).
	Bookmarks, Initial bool
	// Restart: a Restore restarts the API server on the restored etcd.
	Restart bool
	// Selector is a Watch's or List's label selector ("": all). Every
	// write labels its object as the model does (model.ShardLabel, by
	// the object's key), so shard=a or shard=b selects the same objects
	// of both control planes.
	Selector string
	// Field is a Watch's or List's field selector ("": all; the model
	// serves metadata.name=NAME).
	Field string
}

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(string(s.Op))
	add := func(k string, v any) { fmt.Fprintf(&b, " %s=%v", k, v) }
	if s.Name != "" {
		add("name", s.Name)
	}
	if s.From != "" || s.Op == Watch || s.Op == List {
		add("from", fmt.Sprintf("%q", s.From))
	}
	if s.Mark != "" {
		add("mark", s.Mark)
	}
	if s.Dur != 0 {
		add("dur", s.Dur)
	}
	if s.Limit != 0 {
		add("limit", s.Limit)
	}
	if s.Timeout != 0 {
		add("timeout", s.Timeout)
	}
	if s.Count != 0 {
		add("count", s.Count)
	}
	if s.Bookmarks {
		add("bookmarks", true)
	}
	if s.Initial {
		add("initial", true)
	}
	if s.Restart {
		add("restart", true)
	}
	if s.Selector != "" {
		add("selector", s.Selector)
	}
	if s.Field != "" {
		add("field", s.Field)
	}
	return b.String()
}

// Script is a scripted history: the same steps drive the model and the
// real control plane.
type Script struct {
	Name  string
	Steps []Step
}

// Scripts are the histories both control planes run.
var Scripts = []Script{
	{Name: "writes-bookmarks-timeout", Steps: []Step{
		{Op: List, From: "", Mark: "start"},
		// a watch with bookmarks: one about a minute in, one 2s before its
		// 70s timeout, then the server ends it
		{Op: Watch, Name: "bm", From: "start", Bookmarks: true, Timeout: 70},
		// no bookmarks asked for: none come; the timeout ends it
		{Op: Watch, Name: "plain", From: "start", Timeout: 70},
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: Create, Name: "c"},
		{Op: Idle, Dur: time.Second},
		{Op: Update, Name: "a"},
		{Op: Delete, Name: "b"},
		{Op: Idle, Dur: 75 * time.Second},
		// resuming from an older revision the watch cache still holds
		{Op: Watch, Name: "resume", From: "w1"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "resume"},
		// Lists: consistent and paged, any version, not older than a write
		{Op: List, From: "", Limit: 1},
		{Op: List, From: "0"},
		{Op: List, From: "w2"},
		// a watch-list: the state, the initial-events-end bookmark, then events
		{Op: Watch, Name: "watchlist", From: "", Bookmarks: true, Initial: true},
		{Op: Idle, Dur: time.Second},
		{Op: Create, Name: "d"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "watchlist"},
		// a legacy watch from 0: the state as ADDED events, then events
		{Op: Watch, Name: "zero", From: "0"},
		{Op: Idle, Dur: time.Second},
		{Op: Update, Name: "c"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "zero"},
	}},
	{Name: "restart-410", Steps: []Step{
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: List, From: "", Mark: "before"},
		{Op: Watch, Name: "open", From: "before", Bookmarks: true, Timeout: 300},
		{Op: Update, Name: "a"},
		{Op: Idle, Dur: time.Second},
		// the open watch ends; the new watch cache starts at etcd's revision
		{Op: Restart},
		{Op: Idle, Dur: time.Second},
		{Op: Create, Name: "c"},
		// a watch from before the restart: 410 Expired
		{Op: Watch, Name: "expired", From: "before", Bookmarks: true},
		{Op: Idle, Dur: time.Second},
		{Op: List, From: "", Mark: "after"},
		{Op: Watch, Name: "again", From: "after", Bookmarks: true, Timeout: 300},
		{Op: Update, Name: "b"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "again"},
		{Op: Stop, Name: "expired"},
	}},
	{Name: "restore-restart", Steps: []Step{
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: Snapshot},
		// the history the restore loses: more revisions than the API
		// server writes of its own when it starts on the restored etcd
		{Op: Fill, Count: 300},
		{Op: Create, Name: "c"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "a"},
		{Op: List, From: "", Mark: "lost"},
		{Op: Watch, Name: "open", From: "lost", Bookmarks: true, Timeout: 300},
		{Op: Idle, Dur: time.Second},
		{Op: Restore, Restart: true},
		{Op: Idle, Dur: time.Second},
		{Op: List, From: ""},
		// the API server waits about 40s for the lost revision, then
		// refuses
		{Op: List, From: "lost"},
		// an informer resumes from the lost history's revision
		{Op: Watch, Name: "resume", From: "lost", Bookmarks: true, Timeout: 300},
		{Op: Create, Name: "d"},
		{Op: Idle, Dur: 5 * time.Second},
		// writes past the lost revisions, long before the resume watch's
		// first periodic bookmark a minute after it opened (a bookmark
		// due while the cache is still below the watch's revision is not
		// sent: with the List inside the watch's first minute, a loaded
		// machine's fill ended after it, and the real server skipped it)
		{Op: Fill, From: "lost"},
		{Op: Update, Name: "b"},
		// past that bookmark, well before the next
		{Op: Idle, Name: "resume", Dur: 80 * time.Second},
		{Op: Stop, Name: "resume"},
	}},
	{Name: "restore-running", Steps: []Step{
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: Snapshot},
		{Op: Fill, Count: 300},
		{Op: Create, Name: "c"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "a"},
		{Op: List, From: "", Mark: "lost"},
		{Op: Watch, Name: "open", From: "lost", Bookmarks: true, Timeout: 300},
		// a write the open watch does not see takes the watch cache above
		// the revision the watch started from, so its periodic bookmark
		// comes (at the lost history's revision), whether or not one of
		// the API server's own lease renewals lands before the restore
		{Op: Fill, Count: 1},
		{Op: Idle, Dur: time.Second},
		// the watch cache's revision as the restore finds it (the lost
		// history's last; a lease renewal of the API server's may land
		// after it: the Fill past it below writes a few more)
		{Op: List, From: "", Mark: "cached"},
		// etcd restored under the running API server
		{Op: Restore},
		{Op: Idle, Dur: time.Second},
		{Op: List, From: ""},
		{Op: List, From: "0"},
		{Op: Create, Name: "d"},
		// past the open watch's first periodic bookmark, a minute after it
		// opened (the model's restore takes no time, the real one about 10s)
		{Op: Idle, Dur: 62 * time.Second},
		{Op: Watch, Name: "watchlist", From: "", Bookmarks: true, Initial: true},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "watchlist"},
		// the cache takes no event at or below its revision: a write of the
		// new history that lands there is lost for every watch, so the
		// writes go past it before the next one
		{Op: Fill, From: "cached", Count: 5},
		{Op: Update, Name: "b"},
		{Op: Idle, Dur: 2 * time.Second},
		{Op: List, From: ""},
		{Op: Stop, Name: "open"},
	}},
	{Name: "label-selector", Steps: []Step{
		// objects of both shards (in its namespace, conformance-4: b, d
		// and f of shard a; a, c and e of shard b)
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: Create, Name: "c"},
		{Op: Create, Name: "d"},
		{Op: List, From: "", Selector: "shard=a", Mark: "start"},
		// a selected watch with bookmarks: the events of its shard only,
		// and bookmarks at the cache's revision whatever it selects
		{Op: Watch, Name: "sel", From: "start", Bookmarks: true, Timeout: 70, Selector: "shard=a"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "b"},
		{Op: Create, Name: "e"},
		{Op: Create, Name: "f"},
		{Op: Delete, Name: "c"},
		{Op: Delete, Name: "d"},
		{Op: Idle, Dur: 75 * time.Second},
		// lists: consistent and paged, and from a write of the other shard
		{Op: List, From: "", Limit: 1, Selector: "shard=a"},
		{Op: List, From: "w6", Selector: "shard=b"},
		// a selected watch-list: its shard's state, then its events
		{Op: Watch, Name: "watchlist", From: "", Bookmarks: true, Initial: true, Selector: "shard=b"},
		{Op: Idle, Dur: time.Second},
		{Op: Update, Name: "b"},
		{Op: Update, Name: "a"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "watchlist"},
	}},
	{Name: "field-selector", Steps: []Step{
		{Op: Create, Name: "a"},
		{Op: Create, Name: "b"},
		{Op: Create, Name: "c"},
		{Op: List, From: "", Field: "metadata.name=b", Mark: "start"},
		// a watch of one object by name with bookmarks: its events only,
		// and bookmarks at the cache's revision
		{Op: Watch, Name: "one", From: "start", Bookmarks: true, Timeout: 70, Field: "metadata.name=b"},
		{Op: Update, Name: "a"},
		{Op: Update, Name: "b"},
		{Op: Delete, Name: "a"},
		{Op: Delete, Name: "b"},
		{Op: Create, Name: "b"},
		{Op: Idle, Dur: 75 * time.Second},
		// a paged list of one name, and one of a name that does not exist
		{Op: List, From: "", Limit: 1, Field: "metadata.name=c"},
		{Op: List, From: "", Field: "metadata.name=z"},
		// a watch-list of one object by name
		{Op: Watch, Name: "watchlist", From: "", Bookmarks: true, Initial: true, Field: "metadata.name=c"},
		{Op: Idle, Dur: time.Second},
		{Op: Update, Name: "b"},
		{Op: Update, Name: "c"},
		{Op: Idle, Dur: time.Second},
		{Op: Stop, Name: "watchlist"},
	}},
	// The client's HTTP/2 connection frozen: client-go's health check
	// pings it after 30s without a frame and closes it 15s later; the
	// watch on it ends with an error, so does the List hung on it (and
	// client-go's retry of it, 1s later, on a new connection whose TLS
	// handshake gets no answer: 10s), and a List with no connection
	// fails after 10s. No write while frozen: the fault proxy forwards
	// what it held at the thaw, to a server the client gave up on.
	{Name: "freeze-http2", Steps: []Step{
		{Op: List, From: "", Mark: "start"},
		{Op: Watch, Name: "w", From: "start", Timeout: 600},
		{Op: Create, Name: "a"},
		// the watch open (its answer is not awaited) and its event read:
		// the last frame the client reads
		{Op: Idle, Dur: time.Second},
		{Op: Freeze},
		{Op: Idle, Dur: 20 * time.Second},
		{Op: List, From: ""},
		{Op: List, From: ""},
		{Op: Thaw},
		{Op: List, From: ""},
		{Op: Stop, Name: "w"},
	}},
}
