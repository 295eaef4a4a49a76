library(testthat)
library(fdpriv)

test_check("fdpriv")
