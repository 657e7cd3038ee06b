# Bash completion for gpucc.  Commands and options come from gpucc itself
# (`gpucc help`, `gpucc CMD -h`), so completion never falls behind -h.
_gpucc() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local gpucc=${COMP_WORDS[0]}
	local commands
	commands=$("$gpucc" help 2>/dev/null | sed -n '/^commands:/,/^$/{s/^  \([a-z]*\).*/\1/p}' | sort -u)
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$commands --version" -- "$cur"))
		return
	fi
	local cmd=${COMP_WORDS[1]} first=2
	# `gpucc help CMD [SUB]` completes as `gpucc CMD [SUB]` does.
	if [ "$cmd" = help ]; then
		if [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
			return
		fi
		cmd=${COMP_WORDS[2]} first=3
	fi
	# Two-word commands ("cache stats").
	local sub
	sub=$("$gpucc" help 2>/dev/null | sed -n "s/^  $cmd \([a-z]*\) .*/\1/p")
	if [ -n "$sub" ] && [ "$COMP_CWORD" -eq "$first" ]; then
		COMPREPLY=($(compgen -W "$sub" -- "$cur"))
		return
	fi
	[ "$first" = 3 ] && return # help takes nothing more
	[ -n "$sub" ] && cmd="$cmd ${COMP_WORDS[2]}"
	local help
	# shellcheck disable=SC2086
	help=$("$gpucc" $cmd -h 2>/dev/null)
	if [[ $prev == -* ]]; then
		# The option's value, as -h names it ("-C, --directory DIR"):
		# a directory, a file, or nothing to complete (N, TARGET, AGE...).
		local value
		value=$(printf '%s\n' "$help" | awk -v opt="$prev" '/^  +-/ {
			if ($1 ~ /^-.,$/) { short = substr($1, 1, 2); long = $2; v = $3 }
			else { short = ""; long = $1; v = $2 }
			if ((opt == short || opt == long) && v ~ /^[A-Z]/) { print v; exit }
		}')
		case $value in
		DIR|CACHE) COMPREPLY=($(compgen -d -- "$cur")); return ;;
		FILE|IMAGE|OBJ|OUT|SNAP|BASE) COMPREPLY=($(compgen -f -- "$cur")); return ;;
		?*) COMPREPLY=(); return ;;
		esac
	fi
	if [[ $cur == -* ]]; then
		local options
		# The options table only: a description that mentions another
		# program's option (compile's "ld.lld ... --version") offered it.
		options=$(printf '%s\n' "$help" | awk '/^options:/ { table = 1; next }
			table && /^  +-/ { print ($1 ~ /^-.,$/) ? $2 : $1 }' | grep -o -- '^--[a-z0-9-]*' | sort -u)
		COMPREPLY=($(compgen -W "$options" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _gpucc gpucc
