package admin_test

import (
	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/governor"
)

var _ admin.Governor = (*governor.Engine)(nil)
