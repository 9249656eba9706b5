package admin_test

import (
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
)

func TestNewValidatesOptions(t *testing.T) {
	eng := newEngine(t)
	tests := []struct {
		name    string
		opts    admin.Options
		wantErr string // "" for success
	}{
		{name: "valid", opts: admin.Options{Governor: eng, Keys: testKeys}},
		{name: "no keys", opts: admin.Options{Governor: eng}},
		{name: "redis store", opts: admin.Options{Governor: eng, Info: admin.Info{Store: "redis"}}},
		{name: "no governor", opts: admin.Options{Keys: testKeys}, wantErr: "governor is required"},
		{name: "empty key", opts: admin.Options{Governor: eng, Keys: []admin.Key{{Principal: "a", Role: admin.RoleViewer}}},
			wantErr: "api_keys[0].key: must not be empty"},
		{name: "duplicate key", opts: admin.Options{Governor: eng, Keys: []admin.Key{
			{Key: "s3cret-key", Principal: "a", Role: admin.RoleViewer},
			{Key: "s3cret-key", Principal: "b", Role: admin.RoleAdmin},
		}}, wantErr: "api_keys[1].key: duplicate of api_keys[0].key"},
		{name: "bad role", opts: admin.Options{Governor: eng, Keys: []admin.Key{{Key: "k", Principal: "a", Role: "root"}}},
			wantErr: `api_keys[0].role: unknown role "root"`},
		{name: "empty role", opts: admin.Options{Governor: eng, Keys: []admin.Key{{Key: "k", Principal: "a"}}},
			wantErr: `api_keys[0].role: unknown role ""`},
		{name: "empty principal", opts: admin.Options{Governor: eng, Keys: []admin.Key{{Key: "k", Role: admin.RoleViewer}}},
			wantErr: "api_keys[0].principal: must not be empty"},
		{name: "bad store", opts: admin.Options{Governor: eng, Info: admin.Info{Store: "etcd"}}, wantErr: `unknown store "etcd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := admin.New(tt.opts)
			if tt.wantErr == "" {
				if err != nil || s == nil {
					t.Fatalf("New: got error %v, want a server", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New: got no error, want one containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: got error %q, want it to contain %q", err, tt.wantErr)
			}
			for _, k := range tt.opts.Keys {
				if len(k.Key) > 3 && strings.Contains(err.Error(), k.Key) {
					t.Errorf("New: error %q reveals a key value", err)
				}
			}
		})
	}
}
