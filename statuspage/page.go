package statuspage

import (
	"crypto/sha256"
	_ "embed" // the page's script and style
	"encoding/base64"
)

// The page's style and script, inline in the page: it loads nothing else.
var (
	//go:embed page.css
	pageStyle string
	//go:embed page.js
	pageScript string
)

// The page is pageHead, the snapshot as JSON (in a script element of type
// application/json, which runs nothing), then pageTail. The script reads the
// snapshot from there, draws the page from it, then polls ?format=json.
var (
	pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Breakers</title>
<style>` + pageStyle + `</style>
</head>
<body>
<header>
<h1>Breakers</h1>
<p id="status" role="status">loading…</p>
<p class="links"><a href="?format=json">JSON</a></p>
</header>
<noscript><p>This page draws itself with JavaScript; <a href="?format=json">the same data as JSON</a>.</p></noscript>
<main id="breakers"></main>
<script type="application/json" id="snapshot">`
	pageTail = `</script>
<script>` + pageScript + `</script>
</body>
</html>
`
	// contentSecurityPolicy lets the page run its own script and style
	// only, fetch from its own origin only, and load nothing: should a name
	// ever reach the page as markup, no script in it would run.
	contentSecurityPolicy = "default-src 'none'; script-src '" + hash(pageScript) + "'; style-src '" +
		hash(pageStyle) + "'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// hash returns the CSP source expression of an inline script or style.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
