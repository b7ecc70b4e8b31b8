package registry

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/distribution/distribution/v3/registry/api/errcode"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// realm is the basic-authentication realm a refused write is challenged with.
const realm = "plinth-registry"

// writeGate lets reads through to the registry as anyone and every write only with cred.
//
// It is an http.Handler in front of distribution's rather than distribution's own access
// controllers: those (htpasswd, token) authenticate every request alike, and Flux must pull
// without a secret while only plinth-controller pushes. A read is GET or HEAD outside the
// upload endpoints; everything else — uploads (POST, PATCH, PUT, and GET or DELETE of an
// upload in progress), manifest writes (PUT) and deletes (DELETE) — needs the credential.
func writeGate(next http.Handler, cred registryauth.Credential) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRead(r) || authorized(r, cred) {
			next.ServeHTTP(w, r)
			return
		}
		// A write without the credential is someone trying: logged at the level of the
		// registry's warnings (its other 4xx answers are at 4), never with what the client
		// sent as credential.
		klog.Background().WithName("registry").V(2).Info("Write refused without the registry's credential",
			"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`"`)
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		_ = errcode.ServeJSON(w, errcode.ErrorCodeUnauthorized.WithMessage("pushing to this registry needs its credential"))
	})
}

// isRead says whether a request only reads: GET or HEAD of anything but an upload.
func isRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return !strings.Contains(r.URL.Path, "/blobs/uploads/") && !strings.HasSuffix(r.URL.Path, "/blobs/uploads")
}

// authorized says whether the request carries cred as basic authentication, compared in
// constant time.
func authorized(r *http.Request, cred registryauth.Credential) bool {
	user, password, ok := r.BasicAuth()
	if !ok || !cred.Valid() {
		return false
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(cred.Username))
	passwordOK := subtle.ConstantTimeCompare([]byte(password), []byte(cred.Password))
	return userOK&passwordOK == 1
}
