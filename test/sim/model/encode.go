package model

import (
	"encoding/json"
	"strconv"
)

// The JSON the model serves: PartialObjectMetadata(List) to metadata
// clients, objects of the resource's kind (metadata and
// status.observedGeneration) to dynamic clients.

type jsonMeta struct {
	Name            string            `json:"name,omitempty"`
	Namespace       string            `json:"namespace,omitempty"`
	UID             string            `json:"uid,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Generation      int64             `json:"generation,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

type jsonStatus struct {
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
}

type jsonObject struct {
	Kind       string      `json:"kind"`
	APIVersion string      `json:"apiVersion"`
	Metadata   jsonMeta    `json:"metadata"`
	Status     *jsonStatus `json:"status,omitempty"`
}

type jsonListMeta struct {
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

type jsonList struct {
	Kind       string       `json:"kind"`
	APIVersion string       `json:"apiVersion"`
	Metadata   jsonListMeta `json:"metadata"`
	Items      []jsonObject `json:"items"`
}

type jsonEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

const metaAPIVersion = "meta.k8s.io/v1"

func (r *Resource) apiVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

func objectJSON(r *Resource, o *Object, meta bool) jsonObject {
	j := jsonObject{Kind: r.Kind, APIVersion: r.apiVersion(), Metadata: jsonMeta{
		Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: r.rvString(o.RV),
		Generation: o.Generation, Labels: map[string]string{ShardLabel: Shard(o.Key())}, Annotations: o.Annotations,
	}}
	if meta {
		j.Kind, j.APIVersion = "PartialObjectMetadata", metaAPIVersion
	} else if o.HasObserved {
		g := o.ObservedGeneration
		j.Status = &jsonStatus{ObservedGeneration: &g}
	}
	return j
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the model's own types always marshal
	}
	return b
}

func encodeObject(r *Resource, o *Object, meta bool) []byte { return mustJSON(objectJSON(r, o, meta)) }

// encodeEvent renders one watch event. A delete event carries the object's
// last state at the deletion's revision (as the cacher sends it).
func encodeEvent(typ string, r *Resource, o *Object, meta bool, _ string) []byte {
	return append(mustJSON(jsonEvent{Type: typ, Object: objectJSON(r, o, meta)}), '\n')
}

// initialEventsEnd is the annotation of the bookmark that ends a
// watch-list's initial events.
const initialEventsEnd = "k8s.io/initial-events-end"

func encodeBookmark(r *Resource, rev uint64, meta, initialEnd bool) []byte {
	j := jsonObject{Kind: r.Kind, APIVersion: r.apiVersion(), Metadata: jsonMeta{ResourceVersion: r.rvString(rev)}}
	if meta {
		j.Kind, j.APIVersion = "PartialObjectMetadata", metaAPIVersion
	}
	if initialEnd {
		j.Metadata.Annotations = map[string]string{initialEventsEnd: "true"}
	}
	return append(mustJSON(jsonEvent{Type: Bookmark, Object: j}), '\n')
}

// encodeList encodes a list (a page of one when cont is set, remaining
// items after it; -1: not counted).
func encodeList(r *Resource, objs []*Object, rev uint64, cont string, remaining int, meta bool) []byte {
	l := jsonList{Kind: r.Kind + "List", APIVersion: r.apiVersion(), Metadata: jsonListMeta{ResourceVersion: r.rvString(rev), Continue: cont}, Items: []jsonObject{}}
	if meta {
		l.Kind, l.APIVersion = "PartialObjectMetadataList", metaAPIVersion
	}
	if cont != "" && remaining >= 0 {
		n := int64(remaining)
		l.Metadata.RemainingItemCount = &n
	}
	for _, o := range objs {
		l.Items = append(l.Items, objectJSON(r, o, meta))
	}
	return mustJSON(l)
}

// apiError is a Kubernetes Status error.
type apiError struct {
	Code    int
	Reason  string
	Message string
	Cause   string // a cause type, e.g. ResourceVersionTooLarge
	Retry   int    // retryAfterSeconds
}

func (e *apiError) Error() string { return strconv.Itoa(e.Code) + " " + e.Reason + ": " + e.Message }

func (e *apiError) status() []byte {
	type cause struct {
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	}
	type details struct {
		Causes            []cause `json:"causes,omitempty"`
		RetryAfterSeconds int     `json:"retryAfterSeconds,omitempty"`
	}
	type status struct {
		Kind       string   `json:"kind"`
		APIVersion string   `json:"apiVersion"`
		Metadata   struct{} `json:"metadata"`
		Status     string   `json:"status"`
		Message    string   `json:"message"`
		Reason     string   `json:"reason"`
		Details    *details `json:"details,omitempty"`
		Code       int      `json:"code"`
	}
	s := status{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: e.Message, Reason: e.Reason, Code: e.Code}
	if e.Cause != "" || e.Retry > 0 {
		s.Details = &details{RetryAfterSeconds: e.Retry}
		if e.Cause != "" {
			s.Details.Causes = []cause{{Reason: e.Cause, Message: e.Message}}
		}
	}
	return mustJSON(s)
}

func (e *apiError) event() []byte {
	return append(mustJSON(jsonEvent{Type: Error, Object: json.RawMessage(e.status())}), '\n')
}

var (
	errExpired = func(rev uint64) *apiError {
		return &apiError{Code: 410, Reason: "Expired", Message: "too old resource version: " + strconv.FormatUint(rev, 10)}
	}
	errTooLarge = &apiError{Code: 504, Reason: "Timeout", Message: "Too large resource version", Cause: "ResourceVersionTooLarge", Retry: 1}
	// errTimeout: a request that did not complete within the request
	// timeout (kube-apiserver's timeout filter; no Retry-After)
	errTimeout = &apiError{Code: 504, Reason: "Timeout", Message: "Timeout: request did not complete within 1m0s"}
)
