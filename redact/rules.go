package redact

import (
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// A rule finds one kind of secret. Its keywords are literal strings that
// every match contains (the prefilter looks for them before the regular
// expression runs), and before and span bound where a match lies around
// a keyword: it starts at most before bytes before the keyword and ends
// at most span bytes after the keyword's start. The secret is group
// (0: the whole match), so that a rule may name its context (a key's
// name, a URL's scheme) without redacting it.
type rule struct {
	id       string
	generic  bool
	keywords []string
	before   int
	span     int
	re       *regexp.Regexp
	at       *regexp.Regexp // re anchored at a keyword (rules whose matches begin with one: before 0)
	word     bool           // re begins with \b: the byte before a match is not a word byte
	group    int
	valid    func(secret string) bool   // nil: every match is a secret
	near     func(s string, p int) bool // a cheap test of the keyword at p before the expression runs; nil: none
}

// The rules. High-confidence rules are formats that name themselves (a
// prefix, a fixed structure) and are on by default; generic rules
// (assignments, high entropy) are opt-in (Options.Generic). Each regular
// expression is bounded, so that the window the prefilter hands it holds
// every match that contains the keyword. They are compiled on first use
// (rules), not when a program starts: every program that opens a store
// links this package, and most never redact.
var rules = sync.OnceValue(compileRules)

// compiled records that the rules were compiled, for the test that
// opening a store compiles nothing.
var compiled atomic.Bool

func compileRules() []rule {
	compiled.Store(true)
	rs := []rule{
		// Cloud.
		{id: "aws-access-key-id", keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA"}, span: 21,
			re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`)},
		{id: "aws-secret-access-key", keywords: []string{"aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey", "secretAccessKey"}, span: 100,
			re:    regexp.MustCompile(`(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey|secretAccessKey)["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})\b`),
			group: 1},
		{id: "gcp-api-key", keywords: []string{"AIza"}, span: 40,
			re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
		{id: "gcp-oauth-client-secret", keywords: []string{"GOCSPX-"}, span: 36,
			re: regexp.MustCompile(`\bGOCSPX-[0-9A-Za-z_-]{28}\b`)},
		{id: "gcp-oauth-access-token", keywords: []string{"ya29."}, span: 1010,
			re: regexp.MustCompile(`\bya29\.[0-9A-Za-z_-]{30,1000}`)},
		{id: "gcp-service-account-key", keywords: []string{"\"private_key_id\""}, span: 70,
			re: regexp.MustCompile(`"private_key_id"\s*:\s*"([0-9a-f]{40})"`), group: 1},
		{id: "azure-storage-key", keywords: []string{"AccountKey="}, span: 110,
			re: regexp.MustCompile(`AccountKey=([A-Za-z0-9+/]{86}==)`), group: 1},
		{id: "digitalocean-token", keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"}, span: 72,
			re: regexp.MustCompile(`\bdo[por]_v1_[a-f0-9]{64}\b`)},
		{id: "databricks-token", keywords: []string{"dapi"}, span: 40,
			re: regexp.MustCompile(`\bdapi[a-f0-9]{32}(?:-\d)?\b`)},

		// Version control and package registries.
		{id: "github-token", keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, span: 41,
			re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`)},
		{id: "github-fine-grained-token", keywords: []string{"github_pat_"}, span: 94,
			re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`)},
		{id: "gitlab-token", keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-"}, span: 70,
			re: regexp.MustCompile(`\bgl(?:pat|dt|rt|ptt)-[0-9A-Za-z_-]{20,50}\b`)},
		{id: "npm-token", keywords: []string{"npm_"}, span: 41,
			re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
		{id: "pypi-token", keywords: []string{"pypi-AgEIcHlwaS5vcmc"}, span: 300,
			re: regexp.MustCompile(`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,250}`)},

		// Model providers.
		{id: "anthropic-api-key", keywords: []string{"sk-ant-"}, span: 130,
			re: regexp.MustCompile(`\bsk-ant-(?:api|admin|oat|ort)\d\d-[A-Za-z0-9_-]{80,110}`)},
		{id: "openai-api-key", keywords: []string{"sk-proj-", "sk-svcacct-", "sk-admin-"}, span: 220,
			re: regexp.MustCompile(`\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,200}`)},
		{id: "openai-legacy-key", keywords: []string{"T3BlbkFJ"}, before: 23, span: 30,
			re: regexp.MustCompile(`\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b`)},
		{id: "huggingface-token", keywords: []string{"hf_"}, span: 40,
			re: regexp.MustCompile(`\bhf_[A-Za-z]{34}\b`)},
		{id: "groq-api-key", keywords: []string{"gsk_"}, span: 60,
			re: regexp.MustCompile(`\bgsk_[A-Za-z0-9]{52}\b`)},
		{id: "xai-api-key", keywords: []string{"xai-"}, span: 90,
			re: regexp.MustCompile(`\bxai-[A-Za-z0-9]{80}\b`)},
		{id: "replicate-token", keywords: []string{"r8_"}, span: 45,
			re: regexp.MustCompile(`\br8_[A-Za-z0-9]{37}\b`)},

		// Chat and mail.
		{id: "slack-token", keywords: []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-"}, span: 260,
			re: regexp.MustCompile(`\bxox[baprse]-(?:\d{1,3}-)?[0-9]{8,13}-[0-9A-Za-z-]{8,220}`)},
		{id: "slack-webhook", keywords: []string{"https://hooks.slack.com/"}, span: 130,
			re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows)/T[A-Z0-9]{8,12}/[A-Z0-9]{8,12}/[A-Za-z0-9]{24}`)},
		{id: "discord-webhook", keywords: []string{"https://discord.com/api/webhooks/", "https://discordapp.com/api/webhooks/"}, span: 150,
			re: regexp.MustCompile(`https://(?:discord|discordapp)\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_-]{60,68}`)},
		{id: "telegram-bot-token", keywords: []string{":AA"}, before: 11, span: 40,
			re: regexp.MustCompile(`\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b`)},
		{id: "sendgrid-api-key", keywords: []string{"SG."}, span: 70,
			re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`)},

		// Payments and commerce.
		{id: "stripe-key", keywords: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"}, span: 260,
			re: regexp.MustCompile(`\b(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,247}|whsec_[0-9A-Za-z]{32,64})\b`)},
		{id: "shopify-token", keywords: []string{"shpat_", "shpca_", "shppa_", "shpss_"}, span: 40,
			re: regexp.MustCompile(`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`)},
		{id: "square-token", keywords: []string{"EAAA", "sq0atp-", "sq0csp-"}, span: 70,
			re: regexp.MustCompile(`\b(?:EAAA[A-Za-z0-9_-]{60}|sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43})\b`)},

		// Other tokens with a known prefix or structure.
		{id: "linear-api-key", keywords: []string{"lin_api_"}, span: 50,
			re: regexp.MustCompile(`\blin_api_[A-Za-z0-9]{40}\b`)},
		{id: "jwt", keywords: []string{"eyJ"}, span: 2700,
			re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,1000}\.eyJ[A-Za-z0-9_-]{8,1000}\.[A-Za-z0-9_-]{16,600}`)},
		{id: "private-key", keywords: []string{"-----BEGIN"}, span: 16 << 10,
			re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]{0,20} PRIVATE KEY-----[A-Za-z0-9+/=\s:,\\.\-]+?-----END[A-Z0-9 ]{0,20} PRIVATE KEY-----`)},
		{id: "url-password", keywords: []string{"://"}, span: 260,
			re:    regexp.MustCompile(`://[A-Za-z0-9._~%!$&'*+,;=-]{1,64}:([^\s/?#@:"'<>\[\]{}\\]{3,128})@[A-Za-z0-9.-]+`),
			group: 1, valid: validURLPassword, near: atSignAhead},

		// Generic rules: opt-in.
		{id: "generic-password", generic: true,
			keywords: []string{"password", "Password", "PASSWORD", "passwd", "PASSWD", "secret", "Secret", "SECRET", "api_key", "apikey", "API_KEY", "ApiKey", "apiKey", "token", "Token", "TOKEN"},
			before:   40, span: 200,
			re:    regexp.MustCompile(`(?i)[a-z0-9_.-]*(?:password|passwd|secret|api_?key|token)[a-z0-9_]*["']?\s*[:=]\s*["']?([^\s"',;]{6,128})`),
			group: 1, valid: validAssigned},
		{id: "generic-high-entropy",
			generic: true, span: -1,
			re:    regexp.MustCompile(`[A-Za-z0-9+/_=-]{24,512}`),
			valid: highEntropy},
	}
	for i := range rs {
		r := &rs[i]
		if r.before == 0 && len(r.keywords) > 0 {
			expr := r.re.String()
			r.word = strings.HasPrefix(expr, `\b`)
			r.at = regexp.MustCompile(`^(?:` + strings.TrimPrefix(expr, `\b`) + `)`)
		}
	}
	return rs
}

// atSignAhead reports whether the URL whose "://" is at p has an @ in its
// authority: most URLs have none, and the expression need not run.
func atSignAhead(s string, p int) bool {
	for i := p + 3; i < len(s) && i < p+200; i++ {
		switch s[i] {
		case '@':
			return true
		case '/', ' ', '\n', '\t', '"', '\'', '<', '>', '?', '#':
			return false
		}
	}
	return false
}

// validURLPassword refuses the placeholders of templates and examples: a
// variable (${PASS}, $PASS, %s, {{pass}}), and passwords made of one
// repeated character.
func validURLPassword(s string) bool {
	if strings.ContainsAny(s, "$%{}") || strings.HasPrefix(s, "[REDACTED") {
		return false
	}
	switch strings.ToLower(s) {
	case "password", "pass", "passwd", "secret", "xxx", "xxxx", "xxxxx", "xxxxxx", "***", "****", "*****", "******", "changeme", "example":
		return false
	}
	return strings.Trim(s, s[:1]) != ""
}

// validAssigned refuses values of assignments that are code, not secrets:
// a variable reference, a call, a placeholder, a boolean or null.
func validAssigned(s string) bool {
	if strings.ContainsAny(s, "$%{}()<>[]") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "none", "undefined", "required", "optional", "string", "redacted":
		return false
	}
	return !strings.HasPrefix(s, "[REDACTED")
}

// highEntropy accepts a string of at least 24 bytes that mixes upper
// case, lower case and digits with a Shannon entropy of at least 4.3 bits
// per byte: random keys, not words, hex digests (at most 4 bits) or
// identifiers.
func highEntropy(s string) bool {
	var upper, lower, digit bool
	var counts [256]int
	for i := 0; i < len(s); i++ {
		c := s[i]
		counts[c]++
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	if !upper || !lower || !digit {
		return false
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h >= 4.3
}
