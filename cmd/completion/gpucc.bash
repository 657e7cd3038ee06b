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
	local cmd=${COMP_WORDS[1]}
	# Two-word commands ("cache stats").
	local sub
	sub=$("$gpucc" help 2>/dev/null | sed -n "s/^  $cmd \([a-z]*\) .*/\1/p")
	if [ -n "$sub" ] && [ "$COMP_CWORD" -eq 2 ]; then
		COMPREPLY=($(compgen -W "$sub" -- "$cur"))
		return
	fi
	[ -n "$sub" ] && cmd="$cmd ${COMP_WORDS[2]}"
	if [ "$cmd" = help ]; then
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		return
	fi
	case $prev in
	-o|--output|--header|--image|-i|--ptx|--cubin|--hsaco|--bitcode|--module|-m)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	esac
	if [[ $cur == -* ]]; then
		local options
		# shellcheck disable=SC2086
		options=$("$gpucc" $cmd -h 2>/dev/null | grep -o -- '--[a-z0-9-]*' | sort -u)
		COMPREPLY=($(compgen -W "$options" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _gpucc gpucc
