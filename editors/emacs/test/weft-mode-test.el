;;; weft-mode-test.el --- Tests of weft-mode -*- lexical-binding: t; -*-

;; Run from the repository root:
;;   emacs --batch -Q -l editors/emacs/test/weft-mode-test.el -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'cl-lib)

(defconst weft-test-root
  (expand-file-name "../../.." (file-name-directory (or load-file-name buffer-file-name))))

(add-to-list 'load-path (expand-file-name "editors/emacs" weft-test-root))
(require 'weft-mode)

(defun weft-test-face (text &optional nth)
  "The face at the NTH (default 1) occurrence of TEXT in the current buffer."
  (save-excursion
    (goto-char (point-min))
    (dotimes (_ (or nth 1)) (search-forward text))
    (let ((face (get-text-property (match-beginning 0) 'face)))
      (if (consp face) (car face) face))))

(defmacro weft-test-with-file (file &rest body)
  "Visit FILE (relative to the repository root) as a user would, fontify it and run BODY."
  (declare (indent 1))
  `(let ((buffer (find-file-noselect (expand-file-name ,file weft-test-root))))
     (unwind-protect
         (with-current-buffer buffer
           (font-lock-ensure)
           ,@body)
       (kill-buffer buffer))))

(defmacro weft-test-with-text (text &rest body)
  (declare (indent 1))
  `(with-temp-buffer
     (insert ,text)
     (weft-mode)
     (font-lock-ensure)
     ,@body))

(ert-deftest weft-mode-visits-weft-files ()
  (weft-test-with-file "examples/gemm_kernel.weft"
    (should (eq major-mode 'weft-mode))
    (should (equal comment-start "-- "))
    (should (eq indent-line-function #'weft-indent-line))
    (should-not indent-tabs-mode)))

(ert-deftest weft-mode-faces-in-an-example ()
  (weft-test-with-file "examples/gemm_kernel.weft"
    (should (eq (weft-test-face "kernel gemm") 'font-lock-keyword-face))
    (should (eq (weft-test-face "gemm (") 'font-lock-function-name-face))
    (should (eq (weft-test-face "bf16[") 'font-lock-type-face))
    (should (eq (weft-test-face "where") 'font-lock-keyword-face))
    (should (eq (weft-test-face "128 ==") 'weft-number-face))
    (should (eq (weft-test-face "pipeline kk") 'font-lock-keyword-face))
    (should (eq (weft-test-face "zeros [") 'font-lock-builtin-face))
    (should (memq (weft-test-face "A tile kernel") '(font-lock-comment-face font-lock-comment-delimiter-face)))
    (should (eq (weft-test-face "\"c.npy\"") 'font-lock-string-face))))

(ert-deftest weft-mode-faces-in-the-stdlib ()
  (weft-test-with-file "stdlib/nn.weft"
    (should (eq (weft-test-face "def softmax") 'font-lock-keyword-face))
    (should (eq (weft-test-face "softmax (x") 'font-lock-function-name-face))
    (should (eq (weft-test-face "'f[..s, n])") 'weft-type-variable-face))
    (should (eq (weft-test-face "..s, n])") 'weft-shape-variable-face))
    (should (eq (weft-test-face "1e-5") 'weft-number-face))
    (should (eq (weft-test-face "rsqrt") 'font-lock-builtin-face))))

(ert-deftest weft-mode-faces-of-every-token-class ()
  (weft-test-with-text
      (concat "def y (x: f32[8, 64] @shared ?L) (z: 't[..b, n] @reg Sw<3,4,3>) = (true, 2.5e-3)\n"
              "def s = \"tab\\t\" -- TODO\n"
              "def x'1 = let_in'def 1\n"
              "import nn\n")
    (should (eq (weft-test-face "@shared") 'weft-memory-space-face))
    (should (eq (weft-test-face "?L") 'weft-layout-variable-face))
    (should (eq (weft-test-face "'t") 'weft-type-variable-face))
    (should (eq (weft-test-face "..b") 'weft-shape-variable-face))
    (should (eq (weft-test-face "Sw") 'font-lock-builtin-face))
    (should (eq (weft-test-face "true") 'font-lock-constant-face))
    (should (eq (weft-test-face "2.5e-3") 'weft-number-face))
    (should (eq (weft-test-face "\\t") 'weft-escape-face))
    (should (eq (weft-test-face "x'1") 'font-lock-function-name-face))
    (should (eq (weft-test-face "let_in'def") nil))
    (should (eq (weft-test-face "nn") 'font-lock-constant-face))))

(ert-deftest weft-mode-nested-block-comments ()
  (weft-test-with-text "{- a {- nested -} still comment -} def x = 1 -- line\nf32\n"
    (should (memq (weft-test-face "still") '(font-lock-comment-face)))
    (should (eq (weft-test-face "def") 'font-lock-keyword-face))
    (should (memq (weft-test-face "line") '(font-lock-comment-face)))
    (should (eq (weft-test-face "f32") 'font-lock-type-face))
    (goto-char (point-min))
    (search-forward "nested")
    (should (= (nth 4 (syntax-ppss)) 2))
    (search-forward "still")
    (should (= (nth 4 (syntax-ppss)) 1))))

(ert-deftest weft-mode-comment-commands ()
  (weft-test-with-text "def x = 1\n"
    (comment-region (point-min) (point-max))
    (should (equal (buffer-string) "-- def x = 1\n"))
    (uncomment-region (point-min) (point-max))
    (should (equal (buffer-string) "def x = 1\n"))))

(ert-deftest weft-mode-indentation ()
  (let* ((file (expand-file-name "editors/test/indent.weft" weft-test-root))
         (expected (with-temp-buffer (insert-file-contents file) (buffer-string))))
    (with-temp-buffer
      (insert expected)
      (weft-mode)
      (goto-char (point-min))
      (while (re-search-forward "^[ \t]+" nil t) (replace-match ""))
      (indent-region (point-min) (point-max))
      (let ((actual (split-string (buffer-string) "\n"))
            (wanted (split-string expected "\n")))
        (cl-loop for a in actual for w in wanted for n from 1
                 do (should (equal (list n a) (list n w))))))))

(ert-deftest weft-mode-registers-weft-lsp-with-eglot ()
  (defvar eglot-server-programs)
  (let ((eglot-server-programs nil)
        (features features))
    ;; Eglot is not in Emacs 28; its registration runs once `eglot' is provided.
    (unless (featurep 'eglot) (provide 'eglot))
    (load (expand-file-name "editors/emacs/weft-mode.el" weft-test-root) nil t)
    (let ((contact (cdr (assq 'weft-mode eglot-server-programs))))
      (should contact)
      (should (equal (funcall contact) '("weft" "lsp")))
      (should (equal (funcall contact t) '("weft" "lsp")))
      (let ((weft-program "/opt/weft/bin/weft"))
        (should (equal (funcall contact) '("/opt/weft/bin/weft" "lsp")))))))

(ert-deftest weft-mode-byte-compiles-cleanly ()
  (let* ((dir (make-temp-file "weft-mode-" t))
         (source (expand-file-name "weft-mode.el" dir))
         (byte-compile-error-on-warn t))
    (unwind-protect
        (progn
          (copy-file (expand-file-name "editors/emacs/weft-mode.el" weft-test-root) source)
          (should (byte-compile-file source)))
      (delete-directory dir t))))

;;; weft-mode-test.el ends here
