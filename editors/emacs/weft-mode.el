;;; weft-mode.el --- Major mode for weft, a functional tensor language -*- lexical-binding: t; -*-

;; Copyright the weft authors. Licensed under the Apache License, Version 2.0.
;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: languages
;; URL: editors/emacs in the weft repository

;;; Commentary:

;; Editing weft (*.weft): syntax highlighting (keywords, element types, type variables 'a, shape
;; variables ..s, layout variables ?L, memory spaces @shared, numbers, strings and their escapes),
;; comments (`--' and nested `{- -}'), indentation, and the weft language server through Eglot:
;; `M-x eglot' in a weft buffer starts `weft lsp' (the executable is `weft-program').
;;
;;   (add-to-list 'load-path "/path/to/weft/editors/emacs")
;;   (require 'weft-mode)
;;
;; See docs/editors.md in the weft repository.

;;; Code:

(defgroup weft nil
  "Editing weft, a functional tensor language."
  :group 'languages
  :prefix "weft-")

(defcustom weft-program "weft"
  "The weft executable; its `lsp' command is the language server."
  :type 'string)

(defcustom weft-indent-offset 2
  "Indentation of a weft block (a body, a `do', a `then') relative to its start."
  :type 'integer
  :safe #'integerp)

(defface weft-number-face '((t :inherit font-lock-constant-face))
  "Face for weft's integer and float literals.")
(defface weft-type-variable-face '((t :inherit font-lock-type-face :slant italic))
  "Face for weft's type and element-type variables, such as 'a.")
(defface weft-shape-variable-face '((t :inherit font-lock-variable-name-face :slant italic))
  "Face for weft's shape variables, such as ..s.")
(defface weft-layout-variable-face '((t :inherit font-lock-variable-name-face))
  "Face for weft's layout variables, such as ?L.")
(defface weft-memory-space-face '((t :inherit font-lock-preprocessor-face))
  "Face for weft's memory spaces: @global, @shared, @reg.")
(defface weft-escape-face '((t :inherit font-lock-regexp-grouping-backslash))
  "Face for escapes in weft strings: \\\\, \\\", \\n, \\t.")

(defconst weft-keywords
  '("def" "kernel" "let" "in" "fn" "if" "then" "else" "loop" "for" "with" "do" "pipeline"
    "where" "tiles" "grid" "threads" "out" "import" "cast")
  "Weft's reserved words (docs/syntax.md), less `true' and `false'.")

(defconst weft-dtypes
  '("bool" "i4" "i8" "i16" "i32" "i64" "u4" "u8" "u16" "u32" "u64" "f8e4m3" "f8e5m2" "f16" "bf16"
    "f32" "f64")
  "Weft's element types.")

(defconst weft-builtins
  '("map" "map2" "reduce" "scan" "sum" "max" "min" "mean" "argmax" "maximum" "minimum" "select"
    "exp" "log" "sqrt" "rsqrt" "tanh" "sigmoid" "sin" "cos" "abs" "matmul_f32" "transpose"
    "permute" "reshape" "concat" "expand" "iota" "zeros" "ones" "full" "gather" "dequant" "load"
    "save" "random" "arg" "print" "time"
    ;; The kernel tier.
    "block_idx" "shared" "regs" "tile" "mma" "store")
  "Weft's built-in functions (the prelude and the kernel tier).")

(defconst weft--name "[A-Za-z_][A-Za-z0-9_']*"
  "A weft name.")

(defvar weft-mode-syntax-table
  (let ((table (make-syntax-table)))
    ;; `--' to the end of the line (style a), `{- -}' nested (style b).
    (modify-syntax-entry ?\{ "(}1nb" table)
    (modify-syntax-entry ?\} "){4nb" table)
    (modify-syntax-entry ?- ". 123" table)
    (modify-syntax-entry ?\n ">" table)
    ;; A name may hold primes and underscores: x', let_in'def.
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?' "_" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    (dolist (c '(?+ ?* ?/ ?% ?< ?> ?= ?| ?& ?@ ?! ?. ?: ?? ?,))
      (modify-syntax-entry c "." table))
    table)
  "Syntax table for `weft-mode'.")

(defun weft--match-escape (limit)
  "Find the next string escape before LIMIT, for font-lock."
  (let (found)
    (while (and (not found) (re-search-forward "\\\\[\\\\\"nt]" limit t))
      (setq found (nth 3 (save-excursion (syntax-ppss (match-beginning 0))))))
    found))

(defconst weft-font-lock-keywords
  `((,(concat "\\_<\\(def\\|kernel\\)[ \t]+\\(" weft--name "\\)")
     (1 font-lock-keyword-face) (2 font-lock-function-name-face))
    (,(concat "\\_<\\(import\\)[ \t]+\\(" weft--name "\\)")
     (1 font-lock-keyword-face) (2 font-lock-constant-face))
    ;; The first rule to give a face wins: variables and spaces before the words inside them.
    (,(concat "\\_<'" weft--name) . 'weft-type-variable-face)
    (,(concat "\\?" weft--name) . 'weft-layout-variable-face)
    (,(concat "\\.\\." weft--name) . 'weft-shape-variable-face)
    ("@[ \t]*\\(?:global\\|shared\\|reg\\)\\_>" . 'weft-memory-space-face)
    (,(regexp-opt weft-keywords 'symbols) . font-lock-keyword-face)
    (,(regexp-opt '("true" "false") 'symbols) . font-lock-constant-face)
    (,(regexp-opt weft-dtypes 'symbols) . font-lock-type-face)
    (,(regexp-opt weft-builtins 'symbols) . font-lock-builtin-face)
    ("\\_<\\(Sw\\|swizzle\\)[ \t]*<" 1 font-lock-builtin-face)
    ("\\_<[0-9]+\\(?:\\.[0-9]+\\(?:[eE][+-]?[0-9]+\\)?\\|[eE][+-]?[0-9]+\\)?\\_>" . 'weft-number-face)
    (weft--match-escape 0 'weft-escape-face prepend))
  "Font-lock keywords for `weft-mode'.")

;;; Indentation

(defun weft--code (pos)
  "The code of the line at POS, without its trailing `--' comment."
  (save-excursion
    (goto-char pos)
    (let ((start (line-beginning-position)) (end (line-end-position)) (cut nil))
      (goto-char start)
      (while (and (not cut) (search-forward "--" end t))
        (unless (nth 3 (save-excursion (syntax-ppss (match-beginning 0))))
          (setq cut (match-beginning 0))))
      (buffer-substring-no-properties start (or cut end)))))

(defun weft--previous-code-line ()
  "Move to the previous line that holds code; nil at the top of the buffer."
  (let (found)
    (while (and (not found) (zerop (forward-line -1)))
      (unless (string-match-p "\\`[ \t]*\\'" (weft--code (point)))
        (setq found t)))
    found))

(defun weft--let-indentation (pos)
  "The indentation of the `let' that the `in' at POS closes, or nil."
  (save-excursion
    (goto-char pos)
    (let ((depth 1) result)
      (while (and (null result) (re-search-backward "\\_<\\(let\\|in\\)\\_>" nil t))
        (unless (nth 8 (syntax-ppss))
          (setq depth (if (equal (match-string 1) "in") (1+ depth) (1- depth)))
          (when (zerop depth) (setq result (current-indentation)))))
      result)))

(defconst weft--declaration "^[ \t]*\\(?:def\\|kernel\\)\\_>")
(defconst weft--has-equal "\\(?:^\\|[^=<>!]\\)=\\(?:[^=]\\|$\\)")

(defun weft--header-start ()
  "The indentation of the `def' or `kernel' whose header this line continues.
Nil if it continues none."
  (save-excursion
    (let ((lines 0) result (done nil))
      (while (and (not done) (< lines 20))
        (cond ((looking-at weft--declaration) (setq result (current-indentation) done t))
              ((and (> lines 0) (string-match-p "\\(?:=\\|\\_<in\\|\\_<do\\)[ \t]*\\'"
                                                (weft--code (point))))
               (setq done t))
              ((not (weft--previous-code-line)) (setq done t)))
        (setq lines (1+ lines)))
      result)))

(defun weft-calculate-indentation ()
  "The indentation for the current line of weft code."
  (save-excursion
    (beginning-of-line)
    (let ((line (buffer-substring-no-properties (point) (line-end-position))))
      (cond
       ((string-match-p "\\`[ \t]*\\(?:def\\|kernel\\|import\\)\\_>" line) 0)
       ;; A comment above a declaration starts in column 0.
       ((and (string-match-p "\\`[ \t]*--" line)
             (save-excursion
               (while (and (zerop (forward-line 1)) (looking-at "[ \t]*--")))
               (looking-at "[ \t]*\\(?:def\\|kernel\\|import\\)\\_>")))
        0)
       ((and (string-match-p "\\`[ \t]*in\\_>" line)
             (weft--let-indentation (progn (back-to-indentation) (point)))))
       (t
        (if (not (weft--previous-code-line))
            0
          (let* ((code (weft--code (point)))
                 (ind (current-indentation)))
            (cond
             ((string-match-p "\\_<in[ \t]*\\'" code)
              (setq ind (or (weft--let-indentation
                             (+ (line-beginning-position) (string-match "\\_<in[ \t]*\\'" code)))
                            ind)))
             ((string-match-p "\\(?:\\(?:^\\|[^=<>!]\\)=\\|->\\|\\_<\\(?:do\\|then\\|else\\)\\|[([]\\)[ \t]*\\'" code)
              (setq ind (+ (if (string-match-p "\\(?:^\\|[^=<>!]\\)=[ \t]*\\'" code)
                               (or (weft--header-start) ind)
                             ind)
                           weft-indent-offset)))
             ((and (string-match-p weft--declaration code)
                   (not (string-match-p weft--has-equal code)))
              (setq ind (+ ind (* 2 weft-indent-offset)))))
            (when (string-match-p "\\`[ \t]*\\(?:else\\_>\\|[])]\\)" line)
              (setq ind (- ind weft-indent-offset)))
            (max ind 0))))))))

(defun weft-indent-line ()
  "Indent the current line of weft code."
  (interactive)
  (let ((indent (weft-calculate-indentation))
        (offset (- (current-column) (current-indentation))))
    (indent-line-to indent)
    (when (> offset 0) (move-to-column (+ indent offset)))))

;;; The language server

(defun weft--eglot-contact (&optional _interactive)
  "How Eglot starts the weft language server: `weft-program' lsp, over stdio."
  (list weft-program "lsp"))

;;;###autoload
(with-eval-after-load 'eglot
  (defvar eglot-server-programs)
  (add-to-list 'eglot-server-programs '(weft-mode . weft--eglot-contact)))

;;; The mode

;;;###autoload
(define-derived-mode weft-mode prog-mode "Weft"
  "Major mode for editing weft, a functional tensor language.
\\{weft-mode-map}"
  :syntax-table weft-mode-syntax-table
  (setq-local comment-start "-- ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?:--+\\|{-+\\)[ \t]*")
  (setq-local comment-end-skip "[ \t]*\\(?:-}\\|$\\)")
  (setq-local comment-use-syntax t)
  (setq-local font-lock-defaults '(weft-font-lock-keywords))
  (setq-local indent-line-function #'weft-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 8)
  (setq-local electric-indent-chars (append '(?\) ?\]) electric-indent-chars)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.weft\\'" . weft-mode))

(provide 'weft-mode)
;;; weft-mode.el ends here
