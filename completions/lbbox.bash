# bash completion for lbbox: verbs, their subcommands, run's options, image names (from the
# `lbbox images` table) and session names (from `lbbox session ls`).

_lbbox_verbs="run ps logs stop kill rm exec session proc images image inspect tag rmi load save
pull network info version box serve"

_lbbox_run_opts="--image --rootfs --pull --tls-verify=false --entrypoint -d --detach --name
--read-only --tmp-size --memory --pids --cpus --cpu-shares --memory-reservation --cpuset-cpus --cpuset-mems --timeout --network --allow-host --dns -v --volume
--mount --device -w --workdir -e --env --env-file -u --user --rm -i --interactive -t --tty --hostname --seccomp
--cap-add --cap-drop --ulimit --die-with-parent --cgroup-parent --json --profile --help"

# The global options given before the verb (--root, --runroot), to pass on to lbbox.
_lbbox_globals()
{
	local i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--root | --runroot) printf '%s %s ' "${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}" ;;
		esac
	done
}

# REPOSITORY:TAG of every image (a directory image by its name alone).
_lbbox_images()
{
	lbbox $(_lbbox_globals) images 2>/dev/null |
		awk 'NR > 1 && $1 != "<none>" { if ($2 == "<dir>") print $1; else if ($2 == "<none>") print $1; else print $1 ":" $2 }'
}

_lbbox_sessions()
{
	lbbox $(_lbbox_globals) session ls 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_lbbox()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i verb="" vi=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--root | --runroot) ((i++)) ;;
		-*) ;;
		*) verb=${COMP_WORDS[i]} vi=$i && break ;;
		esac
	done
	COMPREPLY=()
	if [[ -z $verb ]]; then
		case $prev in
		--root | --runroot) COMPREPLY=($(compgen -d -- "$cur")) ;;
		*) COMPREPLY=($(compgen -W "$_lbbox_verbs --root --runroot --help --version" -- "$cur")) ;;
		esac
		return
	fi
	local sub=${COMP_WORDS[vi + 1]}
	case $verb in
	run)
		case $prev in
		--network) COMPREPLY=($(compgen -W "off on host" -- "$cur")) ;;
		--pull) COMPREPLY=($(compgen -W "missing always never" -- "$cur")) ;;
		--profile) COMPREPLY=($(compgen -W "default offline_readonly network_basic network_extended" -- "$cur")) ;;
		--rootfs | -w | --workdir) COMPREPLY=($(compgen -d -- "$cur")) ;;
		--env-file | --seccomp | --device) COMPREPLY=($(compgen -f -- "$cur")) ;;
		--image) COMPREPLY=($(compgen -W "host $(_lbbox_images)" -- "$cur")) ;;
		*)
			if [[ $cur == -* ]]; then
				COMPREPLY=($(compgen -W "$_lbbox_run_opts" -- "$cur"))
			else
				COMPREPLY=($(compgen -W "host $(_lbbox_images)" -- "$cur"))
			fi
			;;
		esac
		;;
	session)
		if ((COMP_CWORD == vi + 1)); then
			COMPREPLY=($(compgen -W "create exec ls inspect rm gc" -- "$cur"))
		elif [[ $sub == exec || $sub == inspect || $sub == rm ]]; then
			COMPREPLY=($(compgen -W "$(_lbbox_sessions)" -- "$cur"))
		fi
		;;
	proc)
		if ((COMP_CWORD == vi + 1)); then
			COMPREPLY=($(compgen -W "start attach ls inspect stop" -- "$cur"))
		elif ((COMP_CWORD == vi + 2)); then
			COMPREPLY=($(compgen -W "$(_lbbox_sessions)" -- "$cur"))
		fi
		;;
	image)
		if ((COMP_CWORD == vi + 1)); then
			COMPREPLY=($(compgen -W "ls list inspect tag rm prune load save pull" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_lbbox_images)" -- "$cur"))
		fi
		;;
	inspect | tag | rmi | save)
		case $prev in
		-o | --output | -i | --input) COMPREPLY=($(compgen -f -- "$cur")) ;;
		--format) COMPREPLY=($(compgen -W "docker-archive oci-archive" -- "$cur")) ;;
		*) COMPREPLY=($(compgen -W "$(_lbbox_images)" -- "$cur")) ;;
		esac
		;;
	load)
		case $prev in
		--oci-dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
		*) COMPREPLY=($(compgen -W "-i --input --oci-dir --name -q --quiet" -f -- "$cur")) ;;
		esac
		;;
	network)
		((COMP_CWORD == vi + 1)) && COMPREPLY=($(compgen -W "ls inspect prune" -- "$cur"))
		;;
	info) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
	esac
}
complete -F _lbbox lbbox
