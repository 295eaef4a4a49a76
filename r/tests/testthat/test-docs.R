# The R code blocks of the user guide's R page and of the README run as written, in order, page by
# page, in one environment and a temporary working directory (as python/tests/test_guide.py runs
# the Python blocks; it leaves the ```r fences to this test).

r_blocks <- function(path) {
  lines <- readLines(path, warn = FALSE, encoding = "UTF-8")
  blocks <- list()
  inside <- FALSE
  for (line in lines) {
    if (!inside && grepl("^```r\\s*$", line)) {
      inside <- TRUE
      current <- character()
    } else if (inside && grepl("^```\\s*$", line)) {
      inside <- FALSE
      blocks[[length(blocks) + 1L]] <- paste(current, collapse = "\n")
    } else if (inside) {
      current <- c(current, line)
    }
  }
  blocks
}

for (page in c("docs/guide/r.md", "README.md")) {
  test_that(paste("the R blocks of", page, "run as written"), {
    root <- repo_root()
    skip_if(is.null(root), "the repository is not beside the tests (set FDP_REPO)")
    blocks <- r_blocks(file.path(root, page))
    expect_gt(length(blocks), 0)
    dir.create(work <- tempfile("docs-"))
    old <- setwd(work)
    on.exit(setwd(old), add = TRUE)
    env <- new.env(parent = globalenv())
    for (block in blocks) {
      expect_no_error(utils::capture.output(eval(parse(text = block), envir = env)))
    }
  })
}
