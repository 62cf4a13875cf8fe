package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scrapeAuth lets a scrape through when its bearer token authenticates (a
// TokenReview) as a user allowed to `get` the non-resource URL it asks for
// (a SubjectAccessReview) — the check kube-rbac-proxy and controller-runtime's
// metrics filter make, written against client-go alone so the exporter does
// not link an API server's authentication stack. Decisions are cached per
// token for ttl, so a scrape every few seconds costs two reviews a minute.
type scrapeAuth struct {
	client kubernetes.Interface
	ttl    time.Duration
	log    logr.Logger

	mu    sync.Mutex
	cache map[[sha256.Size]byte]decision
}

type decision struct {
	status int // http.StatusOK, StatusUnauthorized or StatusForbidden
	until  time.Time
}

// maxCachedTokens bounds the cache; past it, the cache starts over.
const maxCachedTokens = 1024

func newScrapeAuth(client kubernetes.Interface, log logr.Logger) *scrapeAuth {
	return &scrapeAuth{client: client, ttl: time.Minute, log: log, cache: map[[sha256.Size]byte]decision{}}
}

// wrap guards h.
func (a *scrapeAuth) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		status := http.StatusUnauthorized
		if ok && token != "" {
			status = a.decide(r.Context(), token, r.URL.Path)
		}
		if status != http.StatusOK {
			http.Error(w, http.StatusText(status), status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (a *scrapeAuth) decide(ctx context.Context, token, path string) int {
	key := sha256.Sum256([]byte(path + "\x00" + token))
	now := time.Now()
	a.mu.Lock()
	d, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(d.until) {
		return d.status
	}
	status, err := a.review(ctx, token, path)
	if err != nil {
		a.log.Error(err, "cannot review a scrape's token (TokenReview or SubjectAccessReview failed); refusing the scrape with 500")
		return http.StatusInternalServerError // not cached: the API server may be back soon
	}
	a.mu.Lock()
	if len(a.cache) >= maxCachedTokens {
		clear(a.cache)
	}
	a.cache[key] = decision{status: status, until: now.Add(a.ttl)}
	a.mu.Unlock()
	return status
}

func (a *scrapeAuth) review(ctx context.Context, token, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}
