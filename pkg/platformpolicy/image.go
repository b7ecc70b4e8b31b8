package platformpolicy

import (
	"path"
	"strings"
)

// ImageRef is a container image reference split into its parts, with Docker Hub's short
// names expanded: nginx is docker.io/library/nginx, user/app is docker.io/user/app.
type ImageRef struct {
	// Registry is the host (and port), for example docker.io or registry.example.com:5000.
	Registry string
	// Repository is the path below the registry, for example library/nginx.
	Repository string
	// Tag is the tag; "latest" when neither a tag nor a digest is given.
	Tag string
	// Digest is the digest, for example sha256:..., if pinned.
	Digest string
}

// ParseImage splits an image reference. It does not validate it: the API did.
func ParseImage(image string) ImageRef {
	var ref ImageRef
	if at := strings.Index(image, "@"); at >= 0 {
		ref.Digest = image[at+1:]
		image = image[:at]
	}
	if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		ref.Tag = image[colon+1:]
		image = image[:colon]
	}
	if ref.Tag == "" && ref.Digest == "" {
		ref.Tag = "latest"
	}
	first, rest, found := strings.Cut(image, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		ref.Registry, ref.Repository = normalizeRegistry(first), rest
	} else {
		ref.Registry, ref.Repository = "docker.io", image
	}
	if ref.Registry == "docker.io" && !strings.Contains(ref.Repository, "/") {
		ref.Repository = "library/" + ref.Repository
	}
	return ref
}

func normalizeRegistry(host string) string {
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return host
}

// FromAnyOf reports whether the image comes from one of the registries, each a host with an
// optional path prefix (registry.example.com, ghcr.io/acme, docker.io/library).
func (r ImageRef) FromAnyOf(registries []string) bool {
	full := r.Registry + "/" + r.Repository
	for _, allowed := range registries {
		host, prefix, _ := strings.Cut(allowed, "/")
		allowed = normalizeRegistry(host)
		if prefix != "" {
			allowed += "/" + strings.TrimSuffix(prefix, "/")
		}
		if full == allowed || strings.HasPrefix(full, allowed+"/") {
			return true
		}
	}
	return false
}

// TagMatchesAny reports whether the tag matches one of the patterns ("*" and "?" wildcards).
// An image pinned by digest satisfies any tag requirement: the digest names the exact content.
func (r ImageRef) TagMatchesAny(patterns []string) bool {
	if r.Digest != "" {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, r.Tag); ok {
			return true
		}
	}
	return false
}
