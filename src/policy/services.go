package policy

import "sort"

// Service is a named bundle of domains a policy can list under services:.
type Service struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Domains     []string `json:"domains"`
}

// catalog is the services catalog. Entries follow the domains: syntax; a
// service never opens a port other than the defaults (443 for CONNECT, 80
// and 443 for plain HTTP). docs/egress.md lists it for users; keep the two
// in step (a test checks the doc names every service).
var catalog = map[string]Service{
	// claude: the hosts Claude Code's network requirements name for the API
	// and sign-in (https://code.claude.com/docs/en/network-config). Not here:
	// downloads.claude.ai (the native installer, its updater and plugin
	// binaries: the image installs Claude Code with npm and turns updates
	// off), telemetry and error reporting (off in the image), claude.ai
	// connectors' mcp-proxy.anthropic.com (off in the image).
	"claude": {Description: "Claude Code: the Anthropic API and sign-in (claude.ai and Console accounts)",
		Domains: []string{"api.anthropic.com", "claude.ai", "platform.claude.com"}},
	"github": {Description: "GitHub: web, API, git over HTTPS, raw content and release downloads",
		Domains: []string{"github.com", "api.github.com", "codeload.github.com", "uploads.github.com", "objects.githubusercontent.com", "raw.githubusercontent.com", "release-assets.githubusercontent.com", "avatars.githubusercontent.com", "gist.githubusercontent.com"}},
	"npm": {Description: "the npm registry",
		Domains: []string{"registry.npmjs.org"}},
	"pypi": {Description: "the Python Package Index",
		Domains: []string{"pypi.org", "files.pythonhosted.org"}},
	"golang": {Description: "the Go module proxy and checksum database",
		Domains: []string{"proxy.golang.org", "sum.golang.org"}},
	"debian": {Description: "Debian package mirrors",
		Domains: []string{"deb.debian.org", "security.debian.org"}},
}

// Services returns the catalog sorted by name.
func Services() []Service {
	out := make([]Service, 0, len(catalog))
	for name, s := range catalog {
		s.Name = name
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ServiceNames is the catalog's service names, sorted.
func ServiceNames() []string {
	var names []string
	for _, s := range Services() {
		names = append(names, s.Name)
	}
	return names
}

// ServiceDomains is the domains entries of the service name (nil for an
// unknown name).
func ServiceDomains(name string) []string { return catalog[name].Domains }
