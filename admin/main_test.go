package admin_test

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestMain puts Gin in test mode: Gin decides its process-global mode at
// init, before the testing flags exist, and would otherwise print its route
// table for every server a test builds.
func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}
