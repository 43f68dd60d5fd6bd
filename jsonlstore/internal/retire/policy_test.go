package retire

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		want      maintenance.RetirePolicy
		wantWhere string // the place the error names ("" and wantErr "": valid)
		wantErr   string
	}{
		{name: "one rule", in: `{"v":1,"retire":[{"older_than":"90d"}]}`,
			want: maintenance.RetirePolicy{Rules: []maintenance.RetireRule{{OlderThan: 90 * 24 * time.Hour}}}},
		{name: "labels and keep", in: `{"v":1,"retire":[{"older_than":"36h","labels":{"kind":"ci"}},{"older_than":"2w"}],"keep":{"labels":{"pin":"yes"}}}`,
			want: maintenance.RetirePolicy{Rules: []maintenance.RetireRule{{OlderThan: 36 * time.Hour, Labels: map[string]string{"kind": "ci"}},
				{OlderThan: 14 * 24 * time.Hour}}, Keep: map[string]string{"pin": "yes"}}},
		{name: "unknown key", in: `{"v":1,"retire":[{"older_than":"1d","lables":{}}]}`, wantErr: `unknown field "lables"`},
		{name: "no version", in: `{"retire":[{"older_than":"1d"}]}`, wantWhere: "v", wantErr: "missing"},
		{name: "newer version", in: `{"v":2,"retire":[{"older_than":"1d"}]}`, wantWhere: "v", wantErr: "version 2"},
		{name: "no rules", in: `{"v":1,"retire":[]}`, wantWhere: "retire", wantErr: "no rules"},
		{name: "no age", in: `{"v":1,"retire":[{"labels":{"a":"b"}}]}`, wantWhere: "retire rule 1", wantErr: "older_than"},
		{name: "bad age", in: `{"v":1,"retire":[{"older_than":"1d"},{"older_than":"soon"}]}`, wantWhere: "retire rule 2: older_than", wantErr: `"soon"`},
		{name: "zero age", in: `{"v":1,"retire":[{"older_than":"0d"}]}`, wantWhere: "retire rule 1: older_than", wantErr: "whole number"},
		{name: "negative age", in: `{"v":1,"retire":[{"older_than":"-5h"}]}`, wantWhere: "retire rule 1: older_than", wantErr: "positive"},
		{name: "bad label", in: `{"v":1,"retire":[{"older_than":"1d","labels":{"Team":"x"}}]}`, wantWhere: "retire rule 1: labels", wantErr: "label key"},
		{name: "bad keep", in: `{"v":1,"retire":[{"older_than":"1d"}],"keep":{"labels":{"":"x"}}}`, wantWhere: "keep: labels", wantErr: "label key"},
		{name: "two values", in: `{"v":1,"retire":[{"older_than":"1d"}]} {}`, wantErr: "data after the JSON value"},
		{name: "syntax", in: `{"v":1,"retire":[{"older_than":"1d"]}`, wantWhere: "byte 36", wantErr: "invalid character"},
		{name: "wrong type", in: `{"v":"1","retire":[]}`, wantErr: "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePolicy([]byte(tc.in))
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, ErrPolicy)
			var pe *PolicyError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.wantWhere, pe.Where)
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, PolicyFile)
		})
	}
}

func TestReadPolicyMissing(t *testing.T) {
	_, err := ReadPolicy(vfs.NewSim())
	require.ErrorIs(t, err, ErrPolicy)
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestPolicyMatch(t *testing.T) {
	p := maintenance.RetirePolicy{Rules: []maintenance.RetireRule{
		{OlderThan: 14 * 24 * time.Hour, Labels: map[string]string{"kind": "ci"}},
		{OlderThan: 90 * 24 * time.Hour},
	}, Keep: map[string]string{"pin": "yes"}}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name   string
		labels map[string]string
		idle   time.Duration
		want   int
	}{
		{"ci, old enough", map[string]string{"kind": "ci"}, 15 * day, 1},
		{"ci, too recent", map[string]string{"kind": "ci"}, 13 * day, 0},
		{"any, old", nil, 91 * day, 2},
		{"kept", map[string]string{"kind": "ci", "pin": "yes"}, 100 * day, 0},
		{"pin with another value", map[string]string{"pin": "no"}, 100 * day, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, p.Match(tc.labels, tc.idle))
		})
	}
}
