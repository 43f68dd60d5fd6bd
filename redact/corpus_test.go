package redact_test

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/redact"
)

type corpusSecret struct {
	Rule   string `json:"rule"`
	Secret string `json:"secret"`
	Text   string `json:"text"`
}

func loadSecrets(tb testing.TB) []corpusSecret {
	tb.Helper()
	f, err := os.Open("../testdata/redact/secrets.jsonl")
	require.NoError(tb, err)
	defer f.Close()
	var out []corpusSecret
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s corpusSecret
		require.NoError(tb, json.Unmarshal(sc.Bytes(), &s))
		out = append(out, s)
	}
	require.NoError(tb, sc.Err())
	return out
}

// TestCorpusDetection: the default rules find at least 95% of the
// corpus's high-confidence secrets, each by its own rule, and the
// redacted text keeps nothing of the secret.
func TestCorpusDetection(t *testing.T) {
	r := redact.Default()
	secrets := loadSecrets(t)
	require.GreaterOrEqual(t, len(secrets), 150)
	found := 0
	for _, s := range secrets {
		out, _ := r.String(s.Text)
		if strings.Contains(out, redact.Placeholder(s.Rule, s.Secret)) && !strings.Contains(out, s.Secret) {
			found++
			continue
		}
		t.Logf("missed %s: %q -> %q", s.Rule, s.Text, out)
	}
	rate := float64(found) / float64(len(secrets))
	t.Logf("detected %d of %d (%.1f%%)", found, len(secrets), 100*rate)
	require.GreaterOrEqual(t, rate, 0.95)
}

// lookalikes writes n bytes of content that resembles secrets without
// being any: UUIDs, hex digests, ULIDs, base64 images, minified
// JavaScript, code that handles credentials, prose. It is deterministic.
func lookalikes(n int) string {
	rng := rand.New(rand.NewPCG(30, 1))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	pick := func(set string, k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = set[rng.IntN(len(set))]
		}
		return string(b)
	}
	random := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	idents := []string{"a", "b", "e", "t", "n", "r", "i", "o", "s", "u", "l", "c", "fn", "cb", "ctx", "req", "res", "key", "token", "secret", "auth", "user", "pass"}
	code := []string{
		`password := os.Getenv("DB_PASSWORD")`,
		`api_key = config["api_key"]`,
		`const token = process.env.GITHUB_TOKEN;`,
		`if err := auth.Login(ctx, user, pass); err != nil { return err }`,
		`secret: ${{ secrets.DEPLOY_KEY }}`,
		`postgres://app:${DB_PASSWORD}@db:5432/app`,
		`git@github.com:sessionstore/sessionstore.git`,
		`https://user@example.com/path?query=1#frag`,
		`curl -u "$USER:$PASS" https://api.example.com`,
		`AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE is the documentation's example`,
		`// see https://docs.github.com/en/authentication/keeping-your-account-and-data-secure`,
		`sk-ant-api03-... (your key here)`,
		`ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`,
		`import { sha256 } from "crypto"; const h = sha256(data).digest("hex")`,
		`-----BEGIN PUBLIC KEY-----`,
		`"integrity": "sha512-`,
		`mailto:someone@example.com`,
	}
	var b strings.Builder
	for b.Len() < n {
		switch rng.IntN(9) {
		case 0: // UUIDs
			u := random(16)
			x := hex.EncodeToString(u)
			fmt.Fprintf(&b, "%s-%s-4%s-a%s-%s\n", x[:8], x[8:12], x[13:16], x[17:20], x[20:32])
		case 1: // hex digests, git object IDs
			fmt.Fprintf(&b, "commit %s\nsha256:%s\n", hex.EncodeToString(random(20)), hex.EncodeToString(random(32)))
		case 2: // ULIDs
			fmt.Fprintf(&b, "session %s %s\n", pick(crockford, 26), pick(crockford, 26))
		case 3: // a base64 image
			b.WriteString(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAA`)
			b.WriteString(base64.StdEncoding.EncodeToString(random(1024 + rng.IntN(16<<10))))
			b.WriteString("\"}}\n")
		case 4: // minified JavaScript
			for range 200 {
				a, c := idents[rng.IntN(len(idents))], idents[rng.IntN(len(idents))]
				fmt.Fprintf(&b, "function %s%d(%s,%s){return %s.%s(%q)+%s[%d]}var %s=%s||{};", a, rng.IntN(99), a, c, a, c, pick(alnum, 6+rng.IntN(20)), c, rng.IntN(9), c, a)
			}
			b.WriteString("\n")
		case 5: // code that handles credentials
			for range 20 {
				b.WriteString(code[rng.IntN(len(code))])
				b.WriteString("\n")
			}
		case 6: // base64url and base64 blobs: nonces, content hashes
			fmt.Fprintf(&b, "nonce=%s etag=%q sri=sha384-%s\n", base64.RawURLEncoding.EncodeToString(random(24)),
				hex.EncodeToString(random(16)), base64.StdEncoding.EncodeToString(random(48)))
		case 7: // identifiers that look like keys
			fmt.Fprintf(&b, "msg_%s toolu_%s req_%s call_%s resp_%s\n", pick(alnum, 24), pick(alnum, 24), pick(alnum, 24), pick(alnum, 24), pick(alnum, 48))
		default: // prose
			b.WriteString("The agent read the configuration, found that the token had expired, asked for a new secret and retried; the password policy requires rotation every ninety days. ")
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestLookalikesDefault: the default rules find at most one secret per
// 10 MiB of look-alikes.
func TestLookalikesDefault(t *testing.T) {
	text := lookalikes(10 << 20)
	found := redact.Default().Find(text)
	for _, f := range found {
		t.Logf("false positive %s: %q", f.Rule, text[f.Start:f.End])
	}
	require.LessOrEqual(t, len(found), 1, "false positives in 10 MiB of look-alikes")
}

// TestLookalikesGeneric: the generic rules mistake more, and are opt-in
// for that reason; the count is logged for the record.
func TestLookalikesGeneric(t *testing.T) {
	r, err := redact.New(redact.Options{Generic: true})
	require.NoError(t, err)
	text := lookalikes(1 << 20)
	found := r.Find(text)
	rules := map[string]int{}
	for _, f := range found {
		rules[f.Rule]++
	}
	t.Logf("generic rules: %d findings in 1 MiB of look-alikes: %v", len(found), rules)
}
