package webfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/agentspec/agentspec/capabilities"
)

// Limits of the local tool.
const (
	// MaxBodyBytes is the most of a response body read.
	MaxBodyBytes = 10 << 20
	// MaxContentChars is the most characters of text returned; longer text
	// is cut and marked.
	MaxContentChars = 50_000
	// Timeout bounds one fetch, redirects included.
	Timeout = 30 * time.Second
	// MaxRedirects is how many redirects one fetch follows.
	MaxRedirects = 10
)

// truncatedMark ends text cut at MaxContentChars.
const truncatedMark = "\n\n[Content truncated]"

// fetcher is the local web_fetch tool.
type fetcher struct {
	allowed, blocked []string // normalised host names
	client           *http.Client
	// allowLoopback lets tests reach their httptest servers on 127.0.0.1.
	// Nothing else sets it: a spec cannot.
	allowLoopback bool
}

func newFetcher(allowed, blocked []string) *fetcher {
	f := &fetcher{}
	for _, d := range allowed {
		f.allowed = append(f.allowed, normalHost(d))
	}
	for _, d := range blocked {
		f.blocked = append(f.blocked, normalHost(d))
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.checkDial}
	f.client = &http.Client{
		Timeout: Timeout,
		Transport: &http.Transport{
			// No proxy: a proxy would dial on the fetcher's behalf, past the
			// address check.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 20 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("more than %d redirects", MaxRedirects)
			}
			if err := f.checkURL(req.URL); err != nil {
				return fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		},
	}
	return f
}

func (f *fetcher) Name() string { return ToolName }

// Hints: fetching changes nothing, and reaches the web.
func (f *fetcher) Hints() capabilities.Hints {
	return capabilities.Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}
}

func (f *fetcher) Description() string {
	return "Fetches the content of a web page at the given URL (http or https) and returns it as JSON: " +
		"its url, title and content, HTML reduced to readable text."
}

func (f *fetcher) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"url": map[string]any{"type": "string", "description": "The URL to fetch (http:// or https://)."},
		},
		"required":             []any{"url"},
		"additionalProperties": false,
	}
}

// result is what the tool returns.
type result struct {
	URL     string `json:"url"`
	Title   string `json:"title"`
	Content string `json:"content"`
}

// Call fetches the URL. Every failure the model could act on (a refused
// or unreachable address, an HTTP error status, a binary body) is a retry
// error naming the URL.
func (f *fetcher) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", capabilities.Retry("the arguments must be {\"url\": \"https://...\"}: %v", err)
	}
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil {
		return "", capabilities.Retry("Failed to fetch %s: not a URL: %v", in.URL, err)
	}
	if err := f.checkURL(u); err != nil {
		return "", capabilities.Retry("Failed to fetch %s: %v", in.URL, err)
	}
	res, err := f.fetch(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", capabilities.Retry("Failed to fetch %s: %v", in.URL, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (f *fetcher) fetch(ctx context.Context, u *url.URL) (*result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5")
	req.Header.Set("User-Agent", "agentspec-web-fetch")
	resp, err := f.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named by the caller
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("the body is larger than %d MiB", MaxBodyBytes>>20)
	}
	contentType := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	res := &result{URL: u.String()}
	switch {
	case mediaType == "" || mediaType == "text/html" || mediaType == "application/xhtml+xml":
		if mediaType == "" && !utf8.Valid(body) {
			return nil, fmt.Errorf("the body is binary (no content type), which this tool cannot show")
		}
		res.Title, res.Content = htmlText(toUTF8(body, contentType))
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		// Indented as it came: decoding and encoding again would sort the
		// keys, round large numbers to float64 and escape <, > and &.
		var pretty bytes.Buffer
		body = toUTF8(body, contentType)
		if json.Indent(&pretty, bytes.TrimSpace(body), "", "  ") == nil {
			res.Content = "```json\n" + pretty.String() + "\n```"
		} else {
			res.Content = string(body)
		}
	case textLike(mediaType):
		res.Content = string(toUTF8(body, contentType))
	default:
		return nil, fmt.Errorf("the body is %s (%d bytes), which this tool cannot show as text", mediaType, len(body))
	}
	res.Content = cleanWhitespace(res.Content)
	if utf8.RuneCountInString(res.Content) > MaxContentChars {
		res.Content = string([]rune(res.Content)[:MaxContentChars]) + truncatedMark
	}
	return res, nil
}

// toUTF8 returns a text body as UTF-8: as it is when it is UTF-8 already
// (whatever the header claims: servers that label UTF-8 as Latin-1 are
// common), else decoded from the character set its byte order mark, its
// Content-Type or, for HTML, its meta tag names, Windows-1252 when none
// does, as browsers read it. Without it, each byte of a Latin-1 or
// Shift_JIS page reached the model as U+FFFD.
func toUTF8(body []byte, contentType string) []byte {
	if utf8.Valid(body) {
		return bytes.TrimPrefix(body, []byte("\ufeff"))
	}
	enc, _, _ := charset.DetermineEncoding(body, contentType)
	decoded, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return body
	}
	return bytes.TrimPrefix(decoded, []byte("\ufeff"))
}

func textLike(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") {
		return true
	}
	switch mediaType {
	case "application/xml", "application/javascript", "application/x-yaml", "application/yaml", "application/toml":
		return true
	}
	return strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml")
}

// checkURL applies the scheme and domain rules to a URL about to be
// fetched: the first one and every redirect's target.
func (f *fetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme+":")
	}
	host := normalHost(u.Hostname())
	if host == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("URLs with credentials (user@host) are refused")
	}
	if slices.Contains(f.blocked, host) {
		return fmt.Errorf("the domain %s is blocked", host)
	}
	if len(f.allowed) > 0 && !slices.Contains(f.allowed, host) {
		return fmt.Errorf("the domain %s is not among the allowed domains (%s)", host, strings.Join(f.allowed, ", "))
	}
	return nil
}

// checkDial refuses a connection to a non-public address. It runs on the
// address each connection dials, after name resolution, so a host name that
// resolves (or re-resolves, DNS rebinding) to a private address is refused
// as an IP literal is.
func (f *fetcher) checkDial(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("refusing to connect to %s: not an IP address", host)
	}
	if reason := refused(ip, f.allowLoopback); reason != "" {
		return fmt.Errorf("refusing to connect to %s: %s", ip, reason)
	}
	return nil
}

// nonPublic are address ranges a fetch must not reach, besides those
// netip's predicates name.
var nonPublic = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
}

// refused says why ip is not a public address, or "" when it is.
func refused(ip netip.Addr, allowLoopback bool) string {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	switch {
	case ip.IsLoopback():
		if allowLoopback {
			return ""
		}
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata services live there)"
	case ip.IsUnspecified():
		return "an unspecified address"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	if ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "the broadcast address"
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	if ip.Is6() && netip.MustParsePrefix("::/96").Contains(ip) {
		return "an IPv4-compatible IPv6 address"
	}
	// Addresses that carry an IPv4 address a gateway forwards to are
	// judged by that address.
	if v4, ok := embeddedIPv4(ip); ok {
		if reason := refused(v4, allowLoopback); reason != "" {
			return reason + " (inside " + ip.String() + ")"
		}
	}
	return ""
}

// NAT64 (RFC 6052) puts an IPv4 address in the last 32 bits, 6to4 (RFC 3056)
// in bits 16 to 48.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
