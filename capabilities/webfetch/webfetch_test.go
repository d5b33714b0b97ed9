package webfetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func ptr[T any](v T) *T { return &v }

// localTool returns the local web_fetch tool of opts, allowed to reach the
// test servers on loopback.
func localTool(t *testing.T, opts Options) *fetcher {
	t.Helper()
	opts.Local = ptr(true)
	c, err := New(opts)
	require.NoError(t, err)
	require.NotNil(t, c.fetcher)
	c.fetcher.allowLoopback = true
	return c.fetcher
}

func fetch(t *testing.T, f *fetcher, u string) (result, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"url": u})
	out, err := f.Call(context.Background(), args)
	var r result
	if err == nil {
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	}
	return r, err
}

func retryMsg(t *testing.T, err error) string {
	t.Helper()
	msg, ok := capabilities.AsRetry(err)
	require.True(t, ok, "want an error the model can act on, got %v", err)
	return msg
}

const page = `<!doctype html><html><head><title> The  Page </title>
<style>body{color:red}</style><script>alert("x")</script></head>
<body><nav><a href="#top">skip</a></nav>
<h1>Hello</h1><p>Some <b>bold</b>   text and a <a href="https://example.com/more">link</a>.</p>
<ul><li>one</li><li>two</li></ul>
<pre>line 1
  line 2</pre>
<img src="x.png" alt="pic"><form><input name="q"><button>Go</button></form>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
</body></html>`

func TestFetchReducesHTMLToText(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Contains(t, r.Header.Get("Accept"), "text/html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	r, err := fetch(t, localTool(t, Options{}), srv.URL+"/page")
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/page", r.URL)
	assert.Equal(t, "The Page", r.Title)
	assert.Equal(t, "skip\n\n# Hello\n\nSome bold text and a link (https://example.com/more).\n\n- one\n- two\n\n"+
		"```\nline 1\n  line 2\n```\n\nk | v |\n\na | 1 |", r.Content)
	for _, gone := range []string{"alert", "color:red", "pic", "Go", "The Page"} {
		assert.NotContains(t, r.Content, gone)
	}
}

func TestFetchOtherBodies(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":[1,2]}`)
		case "/ld+json":
			w.Header().Set("Content-Type", "application/ld+json; charset=utf-8")
			fmt.Fprint(w, `{"z":12345678901234567890,"a":"<b>&"}`+"\n")
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "plain\n\n\n\n\ntext  ")
		case "/long":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, strings.Repeat("é", MaxContentChars+10))
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G'})
		case "/huge":
			w.Header().Set("Content-Type", "text/plain")
			chunk := strings.Repeat("x", 1<<20)
			for range MaxBodyBytes>>20 + 1 {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		case "/missing":
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := localTool(t, Options{})

	r, err := fetch(t, f, srv.URL+"/json")
	require.NoError(t, err)
	assert.Equal(t, "```json\n{\n  \"a\": [\n    1,\n    2\n  ]\n}\n```", r.Content)

	// A +json type is JSON too; keys keep their order, numbers their digits
	// and strings their characters.
	r, err = fetch(t, f, srv.URL+"/ld+json")
	require.NoError(t, err)
	assert.Equal(t, "```json\n{\n  \"z\": 12345678901234567890,\n  \"a\": \"<b>&\"\n}\n```", r.Content)

	r, err = fetch(t, f, srv.URL+"/text")
	require.NoError(t, err)
	assert.Equal(t, "plain\n\ntext", r.Content)

	r, err = fetch(t, f, srv.URL+"/long")
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("é", MaxContentChars)+"\n\n[Content truncated]", r.Content)

	_, err = fetch(t, f, srv.URL+"/png")
	assert.Contains(t, retryMsg(t, err), "the body is image/png (4 bytes), which this tool cannot show as text")

	_, err = fetch(t, f, srv.URL+"/huge")
	assert.Contains(t, retryMsg(t, err), "the body is larger than 10 MiB")

	_, err = fetch(t, f, srv.URL+"/missing")
	assert.Equal(t, "Failed to fetch "+srv.URL+"/missing: HTTP status 404 Not Found", retryMsg(t, err))
}

func TestFetchRefusesLoopbackAndPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the server was reached: %s", r.URL)
	}))
	defer srv.Close()
	c, err := New(Options{Local: ptr(true)})
	require.NoError(t, err)
	f := c.fetcher // as a spec builds it: no loopback
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1")

	_, err = fetch(t, f, srv.URL)
	assert.Contains(t, retryMsg(t, err), "refusing to connect to 127.0.0.1: a loopback address")
	// A name is checked on the address it resolves to, at the moment of
	// dialling, so a name that resolves (or re-resolves) to a private
	// address is refused as the address itself is.
	_, err = fetch(t, f, "http://localhost"+port)
	assert.Contains(t, retryMsg(t, err), "a loopback address")
	_, err = fetch(t, f, "http://[::ffff:127.0.0.1]"+port)
	assert.Contains(t, retryMsg(t, err), "refusing to connect to 127.0.0.1: a loopback address")
}

func TestRefusedAddresses(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"127.0.0.1":          "a loopback address",
		"::1":                "a loopback address",
		"10.1.2.3":           "a private address",
		"192.168.0.1":        "a private address",
		"172.16.5.4":         "a private address",
		"fd00:ec2::254":      "a private address",
		"169.254.169.254":    "a link-local address (cloud metadata services live there)",
		"fe80::1":            "a link-local address (cloud metadata services live there)",
		"0.0.0.0":            "an unspecified address",
		"::":                 "an unspecified address",
		"100.100.100.200":    "a carrier-grade NAT address",
		"224.0.0.1":          "a multicast address",
		"255.255.255.255":    "the broadcast address",
		"::ffff:10.0.0.1":    "a private address",
		"64:ff9b::a9fe:a9fe": "a link-local address (cloud metadata services live there) (inside 64:ff9b::a9fe:a9fe)",
		"2002:7f00:1::":      "a loopback address (inside 2002:7f00:1::)",
		"64:ff9b::808:808":   "",
		"8.8.8.8":            "",
		"2606:4700::1111":    "",
	}
	for addr, want := range cases {
		assert.Equal(t, want, refused(netip.MustParseAddr(addr), false), addr)
	}
	assert.Equal(t, "", refused(netip.MustParseAddr("127.0.0.1"), true), "the test seam allows loopback")
	assert.Equal(t, "a private address", refused(netip.MustParseAddr("10.0.0.1"), true), "and nothing else")
}

func TestDomainRulesApplyToRedirects(t *testing.T) {
	t.Parallel()
	var target *httptest.Server
	target = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "arrived")
	}))
	defer target.Close()
	// localhost names the same server under another host name.
	other := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	hops := 0
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-other":
			http.Redirect(w, r, other+"/x", http.StatusFound)
		case "/to-same":
			http.Redirect(w, r, target.URL+"/x", http.StatusMovedPermanently)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			hops++
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer redirector.Close()

	allowed := localTool(t, Options{AllowedDomains: []string{"127.0.0.1"}})
	r, err := fetch(t, allowed, redirector.URL+"/to-same")
	require.NoError(t, err)
	assert.Equal(t, "arrived", r.Content)
	_, err = fetch(t, allowed, redirector.URL+"/to-other")
	assert.Contains(t, retryMsg(t, err), "redirected to "+other+"/x: the domain localhost is not among the allowed domains (127.0.0.1)")
	_, err = fetch(t, allowed, other)
	assert.Contains(t, retryMsg(t, err), "the domain localhost is not among the allowed domains")

	blocked := localTool(t, Options{BlockedDomains: []string{"LocalHost."}})
	_, err = fetch(t, blocked, redirector.URL+"/to-other")
	assert.Contains(t, retryMsg(t, err), "the domain localhost is blocked")
	_, err = fetch(t, blocked, redirector.URL+"/to-file")
	assert.Contains(t, retryMsg(t, err), `only http and https URLs can be fetched, not "file:"`)
	_, err = fetch(t, blocked, redirector.URL+"/loop")
	assert.Contains(t, retryMsg(t, err), "more than 10 redirects")
	assert.Equal(t, MaxRedirects+1, hops)
}

func TestFetchRefusesWhatIsNotAWebURL(t *testing.T) {
	t.Parallel()
	f := localTool(t, Options{})
	for u, want := range map[string]string{
		"a":                      `only http and https URLs can be fetched, not ":"`,
		"file:///etc/passwd":     `only http and https URLs can be fetched, not "file:"`,
		"ftp://example.com/x":    `only http and https URLs can be fetched, not "ftp:"`,
		"http://":                "the URL has no host",
		"http://u:p@example.com": "URLs with credentials (user@host) are refused",
	} {
		_, err := fetch(t, f, u)
		assert.Contains(t, retryMsg(t, err), want, u)
	}
}

func TestFetchTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	f := localTool(t, Options{})
	f.client.Timeout = 50 * time.Millisecond
	_, err := fetch(t, f, srv.URL)
	msg := retryMsg(t, err)
	assert.Contains(t, msg, "Client.Timeout exceeded", msg)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	c, err := New(Options{})
	require.NoError(t, err)
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	assert.Empty(t, tools, "without local: true there is no local tool, as in pydantic-ai")
	assert.Equal(t, []capabilities.NativeTool{{Kind: "web_fetch", Options: map[string]any{}}}, c.NativeTools())

	c, err = New(Options{Local: ptr(true), AllowedDomains: []string{"example.com"}, EnableCitations: ptr(true)})
	require.NoError(t, err)
	tools, err = c.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "web_fetch", tools[0].Name())
	assert.Equal(t, []capabilities.NativeTool{{Kind: "web_fetch", LocalFallback: true,
		Options: map[string]any{"allowed_domains": []string{"example.com"}, "enable_citations": true}}}, c.NativeTools())

	c, err = New(Options{Local: ptr(true), MaxUses: ptr(5)})
	require.NoError(t, err)
	tools, _ = c.Tools(context.Background())
	assert.Empty(t, tools, "max_uses needs the native tool: no local fallback")
	assert.Equal(t, json.Number("5"), c.NativeTools()[0].Options["max_uses"])
	assert.False(t, c.NativeTools()[0].LocalFallback)

	c, err = New(Options{Native: ptr(false), Local: ptr(true)})
	require.NoError(t, err)
	assert.Empty(t, c.NativeTools(), "native: false: the local tool alone")

	var argErr *capabilities.ArgError
	_, err = New(Options{Native: ptr(false)})
	require.True(t, errors.As(err, &argErr))
	assert.Equal(t, "native", argErr.Option)
	_, err = New(Options{Native: ptr(false), Local: ptr(true), MaxUses: ptr(1)})
	require.True(t, errors.As(err, &argErr))
	assert.Equal(t, "max_uses", argErr.Option)
}

// A body in another character set than UTF-8, declared by the header, a
// byte order mark or the page's own meta tag, is read as text in that
// set; a UTF-8 body stays as it is, whatever a header claims.
func TestFetchDecodesCharsets(t *testing.T) {
	t.Parallel()
	latin1 := []byte("caf\xe9 cr\xe8me")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/header":
			w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
			w.Write(append(append([]byte("<html><body><p>"), latin1...), "</p></body></html>"...))
		case "/meta":
			w.Header().Set("Content-Type", "text/html")
			w.Write(append(append([]byte(`<html><head><meta charset="windows-1252"><title>Caf`+"\xe9"+`</title></head><body><p>`), latin1...), "</p></body></html>"...))
		case "/text":
			w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
			w.Write(latin1)
		case "/utf16":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte{0xff, 0xfe, 'h', 0, 0xe9, 0})
		case "/utf8-mislabelled":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			fmt.Fprint(w, "café crème")
		}
	}))
	defer srv.Close()
	f := localTool(t, Options{})
	for path, want := range map[string]string{
		"/header":           "café crème",
		"/meta":             "café crème",
		"/text":             "café crème",
		"/utf16":            "hé",
		"/utf8-mislabelled": "café crème",
	} {
		r, err := fetch(t, f, srv.URL+path)
		require.NoError(t, err, path)
		assert.Equal(t, want, r.Content, path)
		if path == "/meta" {
			assert.Equal(t, "Café", r.Title)
		}
	}
}

// A page of the most a fetch reads, in many small inline elements, is
// reduced in one pass over it: each text written once, not the whole text
// so far scanned again for every element.
func TestFetchReducesAFullSizePage(t *testing.T) {
	t.Parallel()
	size := MaxBodyBytes
	if raceEnabled {
		size = 1 << 20
	}
	body := "<p>" + strings.Repeat("<b>a- </b>", (size-3)/10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	r, err := fetch(t, localTool(t, Options{}), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a- ", MaxContentChars/3+1)[:MaxContentChars]+truncatedMark, r.Content)
}

// A page nested deeper than the HTML parser takes (512 open elements) is
// still reduced to its text: no markup, scripts or styles reach the model.
func TestFetchReducesADeeplyNestedPage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Deep</title><style>p{color:red}</style></head><body><h1>Top</h1>`+
			strings.Repeat("<div>", 600)+`<p>Inside <a href="https://example.com/x">a link</a>.</p><script>steal()</script>`+
			`<ul><li>one</li></ul>`+strings.Repeat("</div>", 600)+`</body></html>`)
	}))
	defer srv.Close()
	r, err := fetch(t, localTool(t, Options{}), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "Deep", r.Title)
	assert.Equal(t, "# Top\n\nInside a link (https://example.com/x).\n\n- one", r.Content)
}
