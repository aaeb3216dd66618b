"""ROS 2 node `urf_builder`: the PDK build chain as a service.

    ros2 run pleo_driver urf_builder --ros-args -p pawncc:=/opt/pawn/bin/pawncc
    ros2 service call /build_project legacy_robot_interfaces/srv/BuildProject \\
        "{project: /path/to/project.upf, action: rebuild}"

Builds run one at a time in a worker thread; the service answers with the URF's
path, size and the build log.
"""

import sys
import threading

from legacy_robot_common.diagnostics import OK, WARN
from legacy_robot_common.driver_node import DriverNode, run_node
from legacy_robot_common.params import declare
from legacy_robot_interfaces.srv import BuildProject

from .pdk.errors import BuildError, MalformedResource
from .pdk.project import LINE_ENDINGS, BuildSettings, build_project


class UrfBuilderNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('urf_builder', hardware_id='urf_builder', **kwargs)
        self.pawncc = declare(
            self,
            'pawncc',
            '',
            'Pawn compiler executable (replaces the '
            'first word of the UPF\'s pawn command); "" = as the UPF says',
        )
        self.amx_dir = declare(
            self,
            'amx_dir',
            '',
            'folder of prebuilt <script>.amx files used instead of compiling; "" = none',
        )
        self.build_time = declare(
            self,
            'build_time',
            -1,
            'build time stored in URFs, Unix s; -1 = SOURCE_DATE_EPOCH or now',
            minimum=-1,
        )
        self.line_endings = declare(
            self,
            'line_endings',
            'crlf',
            'of the generated .inc and .xml files: crlf (as the PDK) or lf',
            choices=sorted(LINE_ENDINGS),
        )
        self.build_timeout = declare(
            self, 'build_timeout', 600.0, 's a build may take', minimum=1.0
        )
        self.builds = self.failures = 0
        self.last_result = 'no build yet'
        self._busy = threading.Lock()
        self.diagnostics.add_task('builds', self._status)
        self.create_service(
            BuildProject, 'build_project', self._build, callback_group=self.callback_group
        )
        self.begin()

    async def _build(self, request, response):
        if not self._busy.acquire(blocking=False):
            response.success, response.message = False, 'another build is running'
            return response
        log = []
        settings = BuildSettings(
            action=request.action or 'build',
            pawn_executable=self.pawncc or None,
            amx_dir=self.amx_dir or None,
            build_time=None if self.build_time < 0 else self.build_time,
            log=log.append,
            line_ending=LINE_ENDINGS[self.line_endings],
        )

        def work(resolve):
            def run():
                try:
                    resolve(build_project(request.project, settings))
                except (BuildError, MalformedResource, OSError) as exc:
                    resolve(BuildError(str(exc)))
                finally:
                    self._busy.release()

            threading.Thread(target=run, name='urf-build', daemon=True).start()

        result, error = await self.await_reply(work, self.build_timeout)
        self.builds += 1
        self.failures += error is not None
        response.success, response.log = error is None, '\n'.join(log)
        if error is not None:
            response.message = self.last_result = error
            return response
        response.urf_path = result.urf_path or ''
        response.urf_size = result.size
        response.message = self.last_result = (
            f'{result.urf_path}: {result.size} bytes, Adler-32 {result.checksum:08X}'
            if result.urf_path
            else f'{settings.action} done'
        )
        return response

    def _status(self):
        values = {'builds': self.builds, 'failed': self.failures, 'last': self.last_result}
        return (WARN if self.failures else OK), self.last_result, values


def main(args=None):
    return run_node(UrfBuilderNode, args)


if __name__ == '__main__':
    sys.exit(main())
